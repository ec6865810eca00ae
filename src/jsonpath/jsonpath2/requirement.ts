/**
 * The index requirement of a jsonpath2 expression (see ../requirement.ts): a necessary condition
 * for the expression to select anything, derived from the tree.
 *
 * In this dialect a filter tests the node it is applied to, so a filter on the node at path P
 * contributes its own requirement with `@` = P.
 */

import type { JsonValue } from '../../json.js';
import {
  ALWAYS,
  allOf,
  anyOf,
  compares,
  conjunction,
  equals,
  exists,
  flipped,
  isScalar,
  type MemberEquals,
  members,
  type Ordering,
  type PathStep,
  type Requirement,
  step,
} from '../requirement.js';
import type { ComparisonOperator, FilterExpression, Operand, PathExpression, Segment, Selector } from './ast.js';

/** Unions multiply the branches; past this many the walk stops at the union instead. */
const MAX_UNION_BRANCHES = 32;

interface Budget {
  branches: number;
}

export function deriveRequirement(query: PathExpression): Requirement {
  return fromSegments(query.segments, 0, [], { branches: MAX_UNION_BRANCHES });
}

function fromSegments(segments: readonly Segment[], at: number, prefix: readonly PathStep[], budget: Budget): Requirement {
  const segment = segments[at];
  if (segment === undefined) return exists(prefix);
  // `..` applies the selectors to the node itself and to every node below it.
  const base = segment.kind === 'descendant' ? [...prefix, step.descend()] : prefix;
  const { selectors } = segment;
  if (selectors.length > 1) {
    if (budget.branches < selectors.length) return exists(base);
    budget.branches -= selectors.length;
  }
  return anyOf(selectors.map((selector) => fromSelector(selector, segments, at, base, budget)));
}

function fromSelector(
  selector: Selector,
  segments: readonly Segment[],
  at: number,
  prefix: readonly PathStep[],
  budget: Budget,
): Requirement {
  const rest = (next: PathStep): Requirement => fromSegments(segments, at + 1, [...prefix, next], budget);
  switch (selector.kind) {
    case 'name':
      return rest(step.name(selector.name));
    case 'index':
      return rest(step.index(selector.index));
    case 'wildcard':
    case 'slice':
    case 'nested':
      return rest(step.any());
    case 'filter':
      return allOf([fromFilter(selector.expression, prefix), fromSegments(segments, at + 1, prefix, budget)]);
    case 'call':
      // A function result is not a document node: only the node it was applied to is certain.
      return exists(prefix);
  }
}

function fromFilter(expression: FilterExpression, current: readonly PathStep[]): Requirement {
  switch (expression.kind) {
    case 'and':
      return conjunction(expression.operands, current, memberEquals, (e) => fromFilter(e, current));
    case 'or':
      return anyOf(expression.operands.map((e) => fromFilter(e, current)));
    case 'not':
      return ALWAYS;
    case 'test':
      return operandExists(expression.operand, current);
    case 'comparison':
      return fromComparison(expression.operator, expression.left, expression.right, current);
  }
}

/**
 * Every comparison needs a node on each path side (a missing side makes it false). Two say
 * more: `path = scalar` (`=` on scalars is `===` in the evaluator, as `equals` assumes) and
 * `path <, <=, >, >= number` (ordering compares numbers only, as `compares` assumes).
 */
function fromComparison(operator: ComparisonOperator, left: Operand, right: Operand, current: readonly PathStep[]): Requirement {
  if (operator === '=') {
    if (left.kind === 'path' && right.kind === 'value') return pathEquals(left.path, right.value, current);
    if (left.kind === 'value' && right.kind === 'path') return pathEquals(right.path, left.value, current);
  }
  if (operator === '<' || operator === '<=' || operator === '>' || operator === '>=') {
    // Ordering compares numbers only (booleans are not numbers here).
    if (left.kind === 'path' && right.kind === 'value') return pathCompares(left.path, operator, right.value, current);
    if (left.kind === 'value' && right.kind === 'path') return pathCompares(right.path, flipped(operator), left.value, current);
  }
  return allOf([operandExists(left, current), operandExists(right, current)]);
}

function pathEquals(path: PathExpression, value: JsonValue, current: readonly PathStep[]): Requirement {
  const located = locate(path, current);
  return allOf([pathRequirement(path, current), located.exact ? equals(located.steps, value) : ALWAYS]);
}

function pathCompares(path: PathExpression, ordering: Ordering, bound: JsonValue, current: readonly PathStep[]): Requirement {
  const located = locate(path, current);
  return allOf([pathRequirement(path, current), located.exact ? compares(located.steps, ordering, bound) : ALWAYS]);
}

function operandExists(operand: Operand, current: readonly PathStep[]): Requirement {
  return operand.kind === 'path' ? pathRequirement(operand.path, current) : ALWAYS;
}

/** What a path inside a filter needs to select anything, its own filters included. */
function pathRequirement(path: PathExpression, current: readonly PathStep[]): Requirement {
  return fromSegments(path.segments, 0, path.origin === 'root' ? [] : current, { branches: MAX_UNION_BRANCHES });
}

/**
 * The steps of a path inside a filter, from the root. `exact` is false when the walk had to stop
 * early (at a union or a function call): then the path only promises that its prefix exists.
 */
function locate(path: PathExpression, current: readonly PathStep[]): { steps: PathStep[]; exact: boolean } {
  const steps = path.origin === 'root' ? [] : [...current];
  for (const segment of path.segments) {
    const selector = segment.selectors[0];
    if (segment.selectors.length !== 1 || selector === undefined) return { steps, exact: false };
    if (segment.kind === 'descendant') steps.push(step.descend());
    const next = stepOf(selector);
    if (next === 'stop') return { steps, exact: false };
    if (next !== 'stay') steps.push(next);
  }
  return { steps, exact: true };
}

/** A filter keeps the node where it is; a call leaves the document. */
function stepOf(selector: Selector): PathStep | 'stay' | 'stop' {
  switch (selector.kind) {
    case 'name':
      return step.name(selector.name);
    case 'index':
      return step.index(selector.index);
    case 'wildcard':
    case 'slice':
    case 'nested':
      return step.any();
    case 'filter':
      return 'stay';
    case 'call':
      return 'stop';
  }
}

/** `@.name = scalar` (either way round): one member of the node under test equal to a scalar. */
function memberEquals(expression: FilterExpression): MemberEquals | undefined {
  if (expression.kind !== 'comparison' || expression.operator !== '=') return undefined;
  const { left, right } = expression;
  const [path, other] = left.kind === 'path' ? [left.path, right] : right.kind === 'path' ? [right.path, left] : [];
  if (path?.origin !== 'current' || path.singular?.length !== 1 || other?.kind !== 'value' || !isScalar(other.value)) return undefined;
  const [name] = path.singular;
  return typeof name === 'string' ? { name, value: other.value } : undefined;
}

/**
 * For simple expressions, a requirement that holds exactly when the expression selects
 * something (see DialectQuery.exact): a path of names, indices, wildcards and `..`, ending at
 * most in a filter that is one condition (a member path of the node against a scalar, or
 * existing), members of the node against scalars joined by `and`, conditions on the root
 * alone, or, on a node a path of names and indices reaches (the root), such conditions joined
 * by `and` (`$[?($.data[*][?(@.a = 1 and @.b = 2)] and $.data[*][?(@.size > 5)])]`).
 */
export function exactRequirement(query: PathExpression): Requirement | undefined {
  return exactPath(query.segments, []);
}

function exactPath(segments: readonly Segment[], base: readonly PathStep[]): Requirement | undefined {
  const path = [...base];
  for (const [i, segment] of segments.entries()) {
    const selector = segment.selectors.length === 1 ? segment.selectors[0]! : undefined;
    if (segment.kind === 'descendant') path.push(step.descend());
    if (selector?.kind === 'name') path.push(step.name(selector.name));
    else if (selector?.kind === 'index') path.push(step.index(selector.index));
    else if (selector?.kind === 'wildcard') path.push(step.any());
    else if (selector?.kind === 'filter' && i === segments.length - 1) return exactFilter(selector.expression, path);
    else return undefined;
  }
  return exists(path);
}

/** Exactly when some node at `current` passes the filter. */
function exactFilter(expression: FilterExpression, current: readonly PathStep[]): Requirement | undefined {
  switch (expression.kind) {
    case 'test':
      return exactTest(expression.operand, current);
    case 'comparison':
      return exactComparison(expression.operator, expression.left, expression.right, current);
    case 'and':
      return exactConjunction(expression.operands, current);
    default:
      return undefined;
  }
}

/** A condition on the root alone holds for every node at `current` or for none. */
function onRoot(condition: Requirement | undefined, current: readonly PathStep[]): Requirement | undefined {
  return condition && allOf([exists(current), condition]);
}

function exactTest(operand: Operand, current: readonly PathStep[]): Requirement | undefined {
  if (operand.kind !== 'path') return undefined;
  const { origin, segments } = operand.path;
  return origin === 'current' ? exactPath(segments, current) : onRoot(exactPath(segments, []), current);
}

function exactComparison(
  operator: ComparisonOperator,
  left: Operand,
  right: Operand,
  current: readonly PathStep[],
): Requirement | undefined {
  const pathOnLeft = left.kind === 'path';
  const [path, other] = pathOnLeft ? [left, right] : [right, left];
  if (path.kind !== 'path' || other.kind !== 'value' || !isScalar(other.value)) return undefined;
  const steps = memberPath(path.path);
  if (!steps) return undefined;
  const fromCurrent = path.path.origin === 'current';
  const at = fromCurrent ? [...current, ...steps] : steps;
  let condition: Requirement;
  if (operator === '=') condition = equals(at, other.value);
  else if (operator === '!=' || operator === 'contains' || typeof other.value !== 'number' || at.length === 0) return undefined;
  else condition = compares(at, pathOnLeft ? operator : flipped(operator), other.value);
  return fromCurrent ? condition : onRoot(condition, current);
}

/**
 * Members of the node against scalars, on any `current`; other conditions only where at most
 * one node is at `current`, so that all of them are met by the same one.
 */
function exactConjunction(operands: readonly FilterExpression[], current: readonly PathStep[]): Requirement | undefined {
  const equal = operands.map(memberEquals);
  if (equal.every((e) => e !== undefined)) return members(current, equal);
  if (!current.every((s) => s.kind === 'name' || s.kind === 'index')) return undefined;
  const parts = operands.map((operand) => exactFilter(operand, current));
  return parts.every((part) => part !== undefined) ? allOf(parts) : undefined;
}

/** `@.a.b[0]`, `$.a`: the steps of a path of names and indices, or undefined. */
function memberPath(path: PathExpression): PathStep[] | undefined {
  const steps: PathStep[] = [];
  for (const segment of path.segments) {
    const selector = segment.selectors.length === 1 ? segment.selectors[0] : undefined;
    if (segment.kind === 'descendant') return undefined;
    if (selector?.kind === 'name') steps.push(step.name(selector.name));
    else if (selector?.kind === 'index') steps.push(step.index(selector.index));
    else return undefined;
  }
  return steps;
}
