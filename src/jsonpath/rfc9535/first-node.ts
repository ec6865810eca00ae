/**
 * Whether a json-p3 query selects anything, stopping at the first node: the `matches` of an
 * RFC 9535 expression, run for every candidate subscription of every event.
 *
 * json-p3's own evaluation builds a node (value, location, root) for everything a selector
 * yields, and a node list for every `@.name` a filter reads; at 100,000 subscriptions that was
 * most of the matching time. Matching needs neither, so this walk runs over values alone,
 * compiled once from json-p3's syntax tree, depth first (it ends at the first node the last
 * segment yields):
 * - name, index and wildcard selectors read the value directly; slices go through json-p3;
 * - a filter is a predicate: a singular query (`@.a.b`, `$.x[0]`) is read as a value,
 *   comparisons are json-p3's `compare`, the existence of a longer query is this walk again,
 *   functions are the environment's, their arguments read the same way; anything else is
 *   json-p3's own `evaluate`;
 * - a filter that reads only `$` is evaluated once per node, not once per child.
 * The answers are json-p3's, including where `$` points inside a relative query (at that
 * query's start, as json-p3 has it): the compliance suite checks `matches` on every case.
 */
import {
  FunctionExpressionType,
  type JSONPathEnvironment,
  JSONPathNode,
  JSONPathNodeList,
  JSONPathRecursionLimitError,
  type JSONPathQuery,
  type JSONValue,
  jsonpath,
  Nothing,
  type Token,
  TokenKind,
} from 'json-p3';
import { isJsonObject } from '../../json.js';

type Selector = JSONPathQuery['segments'][number]['selectors'][number];
type FilterExpression = jsonpath.expressions.FilterExpression;
type FilterQuery = jsonpath.expressions.FilterQuery;

export type FirstNodeTest = (document: JSONValue) => boolean;

/** Whether something holds of `current`, with `$` meaning `root`. */
type Test = (current: JSONValue, root: JSONValue) => boolean;
/** A value read from `current` or `root`: a JSON value, `Nothing`, or a json-p3 node list. */
type Operand = (current: JSONValue, root: JSONValue) => unknown;
/** Calls `each` on what the selector selects of `value` until it returns true; whether it did. */
type Select = (value: JSONValue, root: JSONValue, each: (child: JSONValue) => boolean) => boolean;

const { NameSelector, IndexSelector, WildcardSelector, FilterSelector } = jsonpath.selectors;
const {
  FilterExpressionLiteral,
  FilterQuery,
  FunctionExtension,
  InfixExpression,
  LogicalExpression,
  PrefixExpression,
  RelativeQuery,
  compare,
} = jsonpath.expressions;

export function firstNodeTest(query: JSONPathQuery): FirstNodeTest {
  const walk = queryWalk(query);
  return (document) => walk(document, document);
}

/** Whether `query`, run from the first argument with `$` meaning the second, selects a node. */
function queryWalk(query: JSONPathQuery): Test {
  // Closures hold what they name, and V8 keeps one scope for all closures of a function: none
  // here names `query`, or the index would keep json-p3's whole tree alive.
  const { environment, segments } = query;
  const steps = segments.map((segment): Select => {
    const select = anySelector(segment.selectors.map((selector) => selectorOf(selector, environment)));
    // json-p3 makes a descendant segment (`..`) from the `..` token alone. (Asking its text
    // serialized the whole segment, filters and all: a fifth of compiling at start-up.)
    if (segment.token.kind !== TokenKind.DDOT) return select;
    const { token } = segment;
    const limit = environment.maxRecursionDepth;
    return (value, root, each) => someDescendant(value, (reached) => select(reached, root, each), limit, token);
  });
  const found = (index: number, value: JSONValue, root: JSONValue): boolean => {
    const step = steps[index];
    return step === undefined || step(value, root, (child) => found(index + 1, child, root));
  };
  return (value, root) => found(0, value, root);
}

function anySelector(selects: Select[]): Select {
  if (selects.length === 1) return selects[0]!;
  return (value, root, each) => selects.some((select) => select(value, root, each));
}

function selectorOf(selector: Selector, environment: JSONPathEnvironment): Select {
  if (selector instanceof NameSelector) {
    const name = selector.name;
    return (value, _root, each) => {
      const child = member(value, name);
      return child !== Nothing && each(child as JSONValue);
    };
  }
  if (selector instanceof IndexSelector) {
    const index = selector.index;
    return (value, _root, each) => {
      const child = element(value, index);
      return child !== Nothing && each(child as JSONValue);
    };
  }
  if (selector instanceof WildcardSelector) return (value, _root, each) => someChild(value, each);
  if (selector instanceof FilterSelector) {
    const test = testOf(selector.expression, environment);
    if (!readsCurrent(selector.expression)) {
      return (value, root, each) => {
        let holds: boolean | undefined;
        return someChild(value, (child) => (holds ??= test(child, root)) && each(child));
      };
    }
    return (value, root, each) => someChild(value, (child) => test(child, root) && each(child));
  }
  return throughJsonP3(selector);
}

function throughJsonP3(selector: Selector): Select {
  return (value, root, each) => {
    for (const node of selector.lazyResolve(new JSONPathNode(value, [], root))) if (each(node.value)) return true;
    return false;
  };
}

/** A filter expression in a logical context (RFC 9535 section 2.3.5.1). */
function testOf(expression: FilterExpression, environment: JSONPathEnvironment): Test {
  if (expression instanceof LogicalExpression) return testOf(expression.expression, environment);
  if (expression instanceof InfixExpression) {
    const { operator } = expression;
    if (operator === '&&' || operator === '||') {
      const left = testOf(expression.left, environment);
      const right = testOf(expression.right, environment);
      return operator === '&&' ? (c, r) => left(c, r) && right(c, r) : (c, r) => left(c, r) || right(c, r);
    }
    const left = operandOf(expression.left, environment);
    const right = operandOf(expression.right, environment);
    return (c, r) => compare(singleValue(left(c, r)), operator, singleValue(right(c, r)));
  }
  if (expression instanceof PrefixExpression && expression.operator === '!') {
    const operand = testOf(expression.right, environment);
    return (c, r) => !operand(c, r);
  }
  if (expression instanceof FilterQuery) return existenceOf(expression);
  const operand = operandOf(expression, environment);
  return (c, r) => truthy(operand(c, r));
}

function existenceOf(query: FilterQuery): Test {
  const relative = query instanceof RelativeQuery;
  if (query.path.singularQuery()) {
    const read = singularReader(query.path);
    return relative ? (c) => read(c) !== Nothing : (_c, r) => read(r) !== Nothing;
  }
  // json-p3 runs a relative query with the current node as its root.
  const walk = queryWalk(query.path);
  return relative ? (c) => walk(c, c) : (_c, r) => walk(r, r);
}

function operandOf(expression: FilterExpression, environment: JSONPathEnvironment): Operand {
  if (expression instanceof FilterExpressionLiteral) {
    const value = expression.evaluate({ environment, currentValue: null, rootValue: null });
    return () => value;
  }
  if (expression instanceof FilterQuery && expression.path.singularQuery()) {
    const read = singularReader(expression.path);
    return expression instanceof RelativeQuery ? (c) => read(c) : (_c, r) => read(r);
  }
  if (expression instanceof FunctionExtension) {
    const fn = environment.functionRegister.get(expression.name);
    if (fn) {
      const args = expression.args.map((arg, i): Operand => {
        if (fn.argTypes[i] === FunctionExpressionType.NodesType) return evaluated(arg, environment);
        const operand = operandOf(arg, environment);
        return (c, r) => unpacked(operand(c, r));
      });
      return (c, r) => fn.call(...args.map((arg) => arg(c, r)));
    }
  }
  return evaluated(expression, environment);
}

/** json-p3's own evaluation of `expression`. */
function evaluated(expression: FilterExpression, environment: JSONPathEnvironment): Operand {
  return (c, r) => expression.evaluate({ environment, currentValue: c, rootValue: r });
}

/** Reads a singular query's one value, or `Nothing` when it selects no node. */
function singularReader(query: JSONPathQuery): (value: JSONValue) => unknown {
  // A singular query's segments hold one name or index selector each.
  const steps = query.segments.map((segment) => {
    const selector = segment.selectors[0]!;
    return selector instanceof NameSelector ? selector.name : (selector as InstanceType<typeof IndexSelector>).index;
  });
  return (value) => {
    let reached: unknown = value;
    for (const step of steps) {
      reached = typeof step === 'string' ? member(reached, step) : element(reached, step);
      if (reached === Nothing) break;
    }
    return reached;
  };
}

function member(value: unknown, name: string): unknown {
  return isJsonObject(value) && Object.hasOwn(value, name) ? value[name] : Nothing;
}

/** json-p3's index selector: negative from the end. */
function element(value: unknown, index: number): unknown {
  if (!Array.isArray(value)) return Nothing;
  const at = index < 0 && value.length >= -index ? value.length + index : index;
  return at in value ? value[at] : Nothing;
}

/** Whether the expression reads the current node (`@`); if not, it holds alike for every child. */
function readsCurrent(expression: FilterExpression): boolean {
  if (expression instanceof FilterExpressionLiteral) return false;
  if (expression instanceof RelativeQuery) return true;
  if (expression instanceof FilterQuery) return false;
  if (expression instanceof LogicalExpression) return readsCurrent(expression.expression);
  if (expression instanceof InfixExpression) return readsCurrent(expression.left) || readsCurrent(expression.right);
  if (expression instanceof PrefixExpression) return readsCurrent(expression.right);
  if (expression instanceof FunctionExtension) return expression.args.some(readsCurrent);
  return true;
}

function someChild(value: JSONValue, each: (child: JSONValue) => boolean): boolean {
  if (Array.isArray(value)) {
    for (const child of value) if (each(child)) return true;
  } else if (isJsonObject(value)) {
    for (const key of Object.keys(value)) if (each(value[key]!)) return true;
  }
  return false;
}

/**
 * Whether `test` holds for `value` or a value anywhere below it (in document order), throwing
 * where json-p3 stops descending.
 */
function someDescendant(value: JSONValue, test: (value: JSONValue) => boolean, limit: number, token: Token, depth = 1): boolean {
  if (depth >= limit) throw new JSONPathRecursionLimitError('recursion limit reached', token);
  return test(value) || someChild(value, (child) => someDescendant(child, test, limit, token, depth + 1));
}

/** What json-p3 compares: the value of a one-node list, anything else as it is. */
function singleValue(value: unknown): unknown {
  return value instanceof JSONPathNodeList && value.nodes.length === 1 ? value.nodes[0]!.value : value;
}

/** A function argument of value type, as json-p3 passes it: a node list as its one value or `Nothing`. */
function unpacked(value: unknown): unknown {
  if (!(value instanceof JSONPathNodeList)) return value;
  if (value.nodes.length === 0) return Nothing;
  return value.nodes.length === 1 ? value.nodes[0]!.value : value;
}

/** RFC 9535's truth of a test expression, as json-p3 has it: an empty node list and `false` are false. */
function truthy(value: unknown): boolean {
  return value instanceof JSONPathNodeList ? value.nodes.length > 0 : value !== false;
}
