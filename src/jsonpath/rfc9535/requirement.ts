/**
 * The index requirement of an RFC 9535 query, read off json-p3's syntax tree.
 * See ../requirement.ts for what a requirement promises. RFC 9535 comparison rules that matter
 * here (section 2.3.5.2): an absent node compares equal only to another absent node, so
 * `@.a == 1` needs a node at `a`, `@.a != 1` needs nothing, and `@.a == @.b` holds when both
 * are absent.
 */
import { type JSONPathQuery, jsonpath, TokenKind } from 'json-p3';
import type { JsonValue } from '../../json.js';
import {
  ALWAYS,
  allOf,
  anyOf,
  compares,
  conjunction,
  endsWith,
  equals,
  exists,
  flipped,
  type MemberEquals,
  members,
  type Ordering,
  type PathStep,
  type Requirement,
  step,
} from '../requirement.js';

const { expressions, selectors } = jsonpath;
type FilterExpression = jsonpath.expressions.FilterExpression;

/** Requirement for `query` selecting at least one node, its path starting at `base`. */
export function queryRequirement(query: JSONPathQuery, base: readonly PathStep[]): Requirement {
  return pathRequirement(query, base).requirement;
}

interface PathResult {
  /** Where the selected nodes are. */
  path: PathStep[];
  requirement: Requirement;
}

function pathRequirement(query: JSONPathQuery, base: readonly PathStep[]): PathResult {
  const path = [...base];
  const parts: Requirement[] = [];
  for (const segment of query.segments) {
    // `..[sel]` applies the selectors to the node and to everything below it.
    if (segment.token.kind === TokenKind.DDOT) path.push(step.descend());
    const only = segment.selectors.length === 1 ? segment.selectors[0] : undefined;
    if (only instanceof selectors.NameSelector) path.push(step.name(only.name));
    else if (only instanceof selectors.IndexSelector) path.push(step.index(only.index));
    else {
      // a union, a slice, a wildcard or a filter: whatever it selects is some child.
      path.push(step.any());
      if (only instanceof selectors.FilterSelector) parts.push(filterRequirement(only.expression, path));
    }
  }
  return { path, requirement: allOf([...parts, exists(path)]) };
}

function filterRequirement(expression: FilterExpression, current: readonly PathStep[]): Requirement {
  if (expression instanceof expressions.LogicalExpression) return filterRequirement(expression.expression, current);
  if (expression instanceof expressions.FilterQuery) return nestedQuery(expression, current).requirement;
  if (expression instanceof expressions.InfixExpression) {
    const { left, right, operator } = expression;
    if (operator === '&&') return conjunction(conjunctionTerms(expression), current, memberEquals, (t) => filterRequirement(t, current));
    if (operator === '||') return anyOf([filterRequirement(left, current), filterRequirement(right, current)]);
    return comparisonRequirement(left, operator, right, current);
  }
  if (expression instanceof expressions.FunctionExtension && expression.name === 'match') return matchRequirement(expression.args, current);
  // `!`, other function extensions (search, ...) and anything new: no promise.
  return ALWAYS;
}

/**
 * `match(@.name, '.*\\.txt')` needs a string at `name` ending with `.txt`, and
 * `match(@.name, 'a\\.txt')` one equal to `a.txt`: patterns that are a literal, or `.*` and
 * a literal. Any other pattern promises only the node.
 */
function matchRequirement(args: readonly FilterExpression[], current: readonly PathStep[]): Requirement {
  const [subject, pattern] = args;
  if (!(subject instanceof expressions.FilterQuery)) return ALWAYS;
  const query = nestedQuery(subject, current);
  const text = pattern instanceof expressions.StringLiteral ? patternRequirement(query.path, pattern.value) : undefined;
  return text ? allOf([query.requirement, text]) : query.requirement;
}

/** What a string at `path` must be to match `pattern` in full, when the pattern is a literal or `.*` and a literal. */
function patternRequirement(path: readonly PathStep[], pattern: string): Requirement | undefined {
  const anyPrefix = pattern.startsWith('.*');
  const literal = literalPattern(anyPrefix ? pattern.slice(2) : pattern);
  if (literal === undefined) return undefined;
  return anyPrefix ? endsWith(path, literal) : equals(path, literal);
}

const REGEX_SYNTAX = new Set('\\.*+?()[]{}|^$');
/** I-Regexp's single-character escapes of punctuation (RFC 9485 section 5.3). */
const ESCAPED_PUNCTUATION = new Set('()*+-.?[\\]^{|}');

/**
 * The text an I-Regexp pattern matches when it has no regular-expression syntax but escaped
 * punctuation (`a\\.txt`), or undefined. `^` and `$` are refused: match() reads them as
 * anchors, as the compliance suite does (see i-regexp.ts).
 */
function literalPattern(pattern: string): string | undefined {
  let text = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '\\') {
      const escaped = pattern[++i];
      if (escaped === undefined || !ESCAPED_PUNCTUATION.has(escaped)) return undefined;
      text += escaped;
    } else if (REGEX_SYNTAX.has(ch)) return undefined;
    else text += ch;
  }
  return text;
}

function comparisonRequirement(
  left: FilterExpression,
  operator: string,
  right: FilterExpression,
  current: readonly PathStep[],
): Requirement {
  const leftQuery = left instanceof expressions.FilterQuery ? nestedQuery(left, current) : undefined;
  const rightQuery = right instanceof expressions.FilterQuery ? nestedQuery(right, current) : undefined;
  const literal = literalValue(leftQuery ? right : left);
  const query = leftQuery ?? rightQuery;
  if (leftQuery && rightQuery) {
    // absent == absent is true, so only strict ordering needs both nodes.
    return operator === '<' || operator === '>' ? allOf([leftQuery.requirement, rightQuery.requirement]) : ALWAYS;
  }
  if (!query || literal === undefined || operator === '!=') return ALWAYS;
  if (operator === '==') return allOf([query.requirement, equals(query.path, literal)]);
  // Ordering holds only between two numbers or two strings (section 2.3.5.2.2).
  const ordering = leftQuery ? (operator as Ordering) : flipped(operator as Ordering);
  return allOf([query.requirement, compares(query.path, ordering, literal)]);
}

function nestedQuery(expression: jsonpath.expressions.FilterQuery, current: readonly PathStep[]): PathResult {
  return pathRequirement(expression.path, expression instanceof expressions.RootQuery ? [] : current);
}

function literalValue(expression: FilterExpression): JsonValue | undefined {
  if (expression instanceof expressions.NullLiteral) return null;
  if (
    expression instanceof expressions.StringLiteral ||
    expression instanceof expressions.NumberLiteral ||
    expression instanceof expressions.BooleanLiteral
  ) {
    return expression.value;
  }
  return undefined;
}

/** The terms of `a && b && c`, however grouped. */
function conjunctionTerms(expression: FilterExpression): FilterExpression[] {
  if (expression instanceof expressions.LogicalExpression) return conjunctionTerms(expression.expression);
  if (expression instanceof expressions.InfixExpression && expression.operator === '&&') {
    return [...conjunctionTerms(expression.left), ...conjunctionTerms(expression.right)];
  }
  return [expression];
}

/** `@.name == literal` (either way round): one member of the node under test equal to a scalar. */
function memberEquals(expression: FilterExpression): MemberEquals | undefined {
  if (!(expression instanceof expressions.InfixExpression) || expression.operator !== '==') return undefined;
  const { left, right } = expression;
  const query = left instanceof expressions.RelativeQuery ? left : right instanceof expressions.RelativeQuery ? right : undefined;
  const value = literalValue(query === left ? right : left);
  const member = query && memberPath(query.path);
  if (member?.length !== 1 || member[0]!.kind !== 'name' || value === undefined) return undefined;
  return { name: member[0]!.name, value: value as MemberEquals['value'] };
}

/**
 * For simple queries, a requirement that holds exactly when the query selects something, so the
 * index needs no evaluation: a path of names, indices, wildcards and `..`, ending at most in a
 * filter that tests one member path against a literal (`@.mimetype == 'text/plain'`,
 * `@.size > 100`, `match(@.name, '.*\\.txt')`) or for existence, members against literals
 * joined by `&&`, or conditions on the root alone (`$[?$.source == 'x' && $.data[?@.size > 100]]`).
 * Anything else: undefined.
 */
export function exactRequirement(query: JSONPathQuery): Requirement | undefined {
  const path: PathStep[] = [];
  const segments = query.segments;
  for (const [i, segment] of segments.entries()) {
    if (segment.token.kind === TokenKind.DDOT) path.push(step.descend());
    const only = segment.selectors.length === 1 ? segment.selectors[0] : undefined;
    if (only instanceof selectors.NameSelector) path.push(step.name(only.name));
    else if (only instanceof selectors.IndexSelector) path.push(step.index(only.index));
    else if (only instanceof selectors.WildcardSelector) path.push(step.any());
    else if (only instanceof selectors.FilterSelector && i === segments.length - 1) {
      return exactFilter(only.expression.expression, [...path, step.any()]);
    } else return undefined;
  }
  return exists(path);
}

/** Exactly when some node at `current` passes the filter. */
function exactFilter(expression: FilterExpression, current: PathStep[]): Requirement | undefined {
  const terms = conjunctionTerms(expression);
  if (terms.length > 1) {
    const equal = terms.map(memberEquals);
    if (equal.every((e) => e !== undefined)) return members(current, equal);
    const onRoot = terms.map(rootCondition);
    return onRoot.every((c) => c !== undefined) ? allOf([exists(current), ...onRoot]) : undefined;
  }
  const rooted = rootCondition(expression);
  if (rooted) return allOf([exists(current), rooted]);
  if (expression instanceof expressions.RelativeQuery) {
    const member = memberPath(expression.path);
    return member && exists([...current, ...member]);
  }
  if (expression instanceof expressions.FunctionExtension) return exactMatch(expression, current);
  const compared = comparedPath(expression);
  if (!compared || !(compared.query instanceof expressions.RelativeQuery)) return undefined;
  return comparison([...current, ...compared.steps], compared.operator, compared.literal);
}

/**
 * `match(@.name, '.*\\.txt')`: exactly a string ending with `.txt` and without line breaks
 * (`endsWith`); `match(@.name, 'a\\.txt')`: exactly the string `a.txt`. A `.*` alone, or a
 * suffix with a line break, makes `exists`, which is not exact.
 */
function exactMatch(expression: jsonpath.expressions.FunctionExtension, current: PathStep[]): Requirement | undefined {
  const [subject, pattern] = expression.args;
  if (expression.name !== 'match' || !(subject instanceof expressions.RelativeQuery) || !(pattern instanceof expressions.StringLiteral))
    return undefined;
  const steps = memberPath(subject.path);
  const requirement = steps && patternRequirement([...current, ...steps], pattern.value);
  return requirement?.kind === 'endsWith' || requirement?.kind === 'equals' ? requirement : undefined;
}

/** A condition on the root alone, which holds for every node of a filter or for none: exactly what it requires. */
function rootCondition(expression: FilterExpression): Requirement | undefined {
  if (expression instanceof expressions.LogicalExpression) return rootCondition(expression.expression);
  if (expression instanceof expressions.RootQuery) return exactRequirement(expression.path);
  const compared = comparedPath(expression);
  if (!compared || !(compared.query instanceof expressions.RootQuery)) return undefined;
  return comparison(compared.steps, compared.operator, compared.literal);
}

/** `query op literal` or `literal op query`, the operator as seen from the query, its query singular. */
function comparedPath(expression: FilterExpression) {
  if (!(expression instanceof expressions.InfixExpression) || expression.logical) return undefined;
  const { left, right, operator } = expression;
  const queryOnLeft = left instanceof expressions.FilterQuery;
  const query = queryOnLeft ? left : right;
  const literal = literalValue(queryOnLeft ? right : left);
  const steps = query instanceof expressions.FilterQuery ? memberPath(query.path) : undefined;
  if (!steps || literal === undefined) return undefined;
  return {
    query,
    steps,
    literal,
    operator: queryOnLeft || operator === '==' || operator === '!=' ? operator : flipped(operator as Ordering),
  };
}

/** `node op literal` at `at`, when a requirement can say it exactly. */
function comparison(at: PathStep[], operator: string, literal: JsonValue): Requirement | undefined {
  if (operator === '==') return equals(at, literal);
  if (operator === '!=' || typeof literal !== 'number' || at.length === 0) return undefined;
  return compares(at, operator as Ordering, literal);
}

/** `@.a.b[0]`: the steps of a singular relative query, or undefined for anything else. */
function memberPath(query: JSONPathQuery): PathStep[] | undefined {
  const steps: PathStep[] = [];
  for (const segment of query.segments) {
    const only = segment.selectors.length === 1 ? segment.selectors[0] : undefined;
    if (segment.token.kind === TokenKind.DDOT) return undefined;
    if (only instanceof selectors.NameSelector) steps.push(step.name(only.name));
    else if (only instanceof selectors.IndexSelector) steps.push(step.index(only.index));
    else return undefined;
  }
  return steps;
}
