/**
 * Evaluates a jsonpath2 tree against a document, in the order python-jsonpath2 yields matches.
 *
 * Nodes are pushed to a callback (`Emit`) instead of being collected, so that `matches()` stops
 * at the first node: a callback returns `true` to stop, and every walker passes that on.
 */

import { isJsonObject, type JsonValue } from '../../json.js';
import { normalizedPath } from '../normalized-path.js';
import type { ComparisonOperator, FilterExpression, FunctionCall, Operand, PathExpression, Segment, Selector } from './ast.js';
import { applyFunction, isInteger, sliceBound } from './functions.js';

/** Where a node is: a linked list from the node back to the root (null), built only when asked for. */
export interface Trail {
  readonly parent: Trail | null;
  /** A member name, an array index, or a function call whose result the node is. */
  readonly step: string | number | { readonly call: string };
}

/** Receives a selected node; returns true to stop the evaluation. */
export type Emit = (value: JsonValue, trail: Trail | null) => boolean;

interface Context {
  readonly root: JsonValue;
  /** False for `matches()` and for paths inside filters: no trail is built. */
  readonly tracksPaths: boolean;
}

export function evaluate(query: PathExpression, document: JsonValue, tracksPaths: boolean, emit: Emit): void {
  const context: Context = { root: document, tracksPaths };
  walkSegments(query.segments, 0, document, null, context, emit);
}

export function renderTrail(trail: Trail | null): string {
  const steps: Trail['step'][] = [];
  for (let t = trail; t !== null; t = t.parent) steps.push(t.step);
  steps.reverse();
  let out = '';
  let location: (string | number)[] = [];
  for (const s of steps) {
    if (typeof s !== 'object') {
      location.push(s);
      continue;
    }
    out += `${normalizedPathPart(out === '', location)}.${s.call}`;
    location = [];
  }
  return out + normalizedPathPart(out === '', location);
}

/** After a function call, the rest of the location continues without a second `$`. */
function normalizedPathPart(isFirst: boolean, location: (string | number)[]): string {
  const text = normalizedPath(location);
  return isFirst ? text : text.slice(1);
}

// ---- paths --------------------------------------------------------------------------------

function walkSegments(
  segments: readonly Segment[],
  at: number,
  value: JsonValue,
  trail: Trail | null,
  context: Context,
  emit: Emit,
): boolean {
  const segment = segments[at];
  if (segment === undefined) return emit(value, trail);
  const next: Emit = (v, t) => walkSegments(segments, at + 1, v, t, context, emit);
  if (segment.kind === 'child') return applySelectors(segment.selectors, value, trail, context, next);
  return walkDescendants(segment.selectors, value, trail, context, next);
}

/** python-jsonpath2 `..`: the selectors on the node itself first, then on each child, depth first. */
function walkDescendants(selectors: readonly Selector[], value: JsonValue, trail: Trail | null, context: Context, emit: Emit): boolean {
  if (applySelectors(selectors, value, trail, context, emit)) return true;
  return forEachChild(value, trail, context, (child, childTrail) => walkDescendants(selectors, child, childTrail, context, emit));
}

function applySelectors(selectors: readonly Selector[], value: JsonValue, trail: Trail | null, context: Context, emit: Emit): boolean {
  for (const selector of selectors) {
    if (applySelector(selector, value, trail, context, emit)) return true;
  }
  return false;
}

function applySelector(selector: Selector, value: JsonValue, trail: Trail | null, context: Context, emit: Emit): boolean {
  switch (selector.kind) {
    case 'name':
      return selectMember(selector.name, value, trail, context, emit);
    case 'index':
      return selectIndex(selector.index, value, trail, context, emit);
    case 'slice':
      return selectSlice(selector, value, trail, context, emit);
    case 'wildcard':
      return forEachChild(value, trail, context, emit);
    case 'filter':
      return holds(selector.expression, value, context) && emit(value, trail);
    case 'nested':
      return selectByNestedPath(selector.path, value, trail, context, emit);
    case 'call':
      return applyCall(selector, value, trail, context, emit);
  }
}

function selectMember(name: string, value: JsonValue, trail: Trail | null, context: Context, emit: Emit): boolean {
  if (!isJsonObject(value) || !Object.hasOwn(value, name)) return false;
  return emit(value[name]!, extend(trail, name, context));
}

function selectIndex(index: number, value: JsonValue, trail: Trail | null, context: Context, emit: Emit): boolean {
  if (!Array.isArray(value)) return false;
  const absolute = index < 0 ? index + value.length : index;
  if (absolute < 0 || absolute >= value.length) return false;
  return emit(value[absolute]!, extend(trail, absolute, context));
}

/** Python slice semantics (`list[start:end:step]`); a step of 0 selects nothing. */
function selectSlice(
  slice: { start: number | null; end: number | null; step: number | null },
  value: JsonValue,
  trail: Trail | null,
  context: Context,
  emit: Emit,
): boolean {
  if (!Array.isArray(value)) return false;
  const step = slice.step ?? 1;
  if (step === 0) return false;
  const length = value.length;
  if (step > 0) {
    const end = sliceBound(slice.end, length, 0, length, length);
    for (let i = sliceBound(slice.start, length, 0, length, 0); i < end; i += step) {
      if (emit(value[i]!, extend(trail, i, context))) return true;
    }
  } else {
    const end = sliceBound(slice.end, length, -1, length - 1, -1);
    for (let i = sliceBound(slice.start, length, -1, length - 1, length - 1); i > end; i += step) {
      if (emit(value[i]!, extend(trail, i, context))) return true;
    }
  }
  return false;
}

/** Members in insertion order, elements in index order. */
function forEachChild(value: JsonValue, trail: Trail | null, context: Context, emit: Emit): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (emit(value[i]!, extend(trail, i, context))) return true;
    }
  } else if (isJsonObject(value)) {
    for (const key of Object.keys(value)) {
      if (emit(value[key]!, extend(trail, key, context))) return true;
    }
  }
  return false;
}

/** python-jsonpath2 `NodeSubscript`: integers index arrays, strings name members, other values select nothing. */
function selectByNestedPath(path: PathExpression, value: JsonValue, trail: Trail | null, context: Context, emit: Emit): boolean {
  return walkOperandPath(path, value, context, (key) => {
    if (isInteger(key)) return selectIndex(key, value, trail, context, emit);
    if (typeof key === 'string') return selectMember(key, value, trail, context, emit);
    return false;
  });
}

/** One result per combination of argument values (Python's `itertools.product`, first argument outermost). */
function applyCall(call: FunctionCall, value: JsonValue, trail: Trail | null, context: Context, emit: Emit): boolean {
  const argumentValues = call.args.map((arg) => operandValues(arg, value, context));
  const resultTrail = context.tracksPaths ? { parent: trail, step: { call: call.text } } : null;
  const combine = (chosen: JsonValue[]): boolean => {
    const options = argumentValues[chosen.length];
    if (options === undefined) {
      const result = applyFunction(call.name, value, chosen);
      return result !== undefined && emit(result, resultTrail);
    }
    return options.some((option) => combine([...chosen, option]));
  };
  return combine([]);
}

function extend(trail: Trail | null, step: string | number, context: Context): Trail | null {
  return context.tracksPaths ? { parent: trail, step } : null;
}

// ---- filter expressions -------------------------------------------------------------------

function holds(expression: FilterExpression, current: JsonValue, context: Context): boolean {
  switch (expression.kind) {
    case 'and':
      return expression.operands.every((e) => holds(e, current, context));
    case 'or':
      return expression.operands.some((e) => holds(e, current, context));
    case 'not':
      return !holds(expression.operand, current, context);
    case 'test':
      return testOperand(expression.operand, current, context);
    case 'comparison':
      return compareOperands(expression.operator, expression.left, expression.right, current, context);
  }
}

/** python-jsonpath2 `SomeExpression`: a path selects something; a value is truthy in Python's sense. */
function testOperand(operand: Operand, current: JsonValue, context: Context): boolean {
  if (operand.kind === 'path') return walkOperandPath(operand.path, current, context, () => true);
  return isTruthy(operand.value);
}

/** True when some pair (left value, right value) satisfies the operator; no pair when a side selects nothing. */
function compareOperands(operator: ComparisonOperator, left: Operand, right: Operand, current: JsonValue, context: Context): boolean {
  const compare = COMPARATORS[operator];
  if (right.kind === 'value') {
    const rightValue = right.value;
    return forEachOperandValue(left, current, context, (l) => compare(l, rightValue));
  }
  const rightValues = operandValues(right, current, context);
  if (rightValues.length === 0) return false;
  return forEachOperandValue(left, current, context, (l) => rightValues.some((r) => compare(l, r)));
}

function forEachOperandValue(operand: Operand, current: JsonValue, context: Context, visit: (value: JsonValue) => boolean): boolean {
  if (operand.kind === 'value') return visit(operand.value);
  return walkOperandPath(operand.path, current, context, visit);
}

function operandValues(operand: Operand, current: JsonValue, context: Context): JsonValue[] {
  if (operand.kind === 'value') return [operand.value];
  const values: JsonValue[] = [];
  walkOperandPath(operand.path, current, context, (v) => {
    values.push(v);
    return false;
  });
  return values;
}

/** A path inside a filter, argument or subscript: `$` is the document root, `@` the node under test. */
function walkOperandPath(path: PathExpression, current: JsonValue, context: Context, visit: (value: JsonValue) => boolean): boolean {
  const start = path.origin === 'root' ? context.root : current;
  if (path.singular !== null) {
    const value = readSteps(start, path.singular);
    return value !== undefined && visit(value);
  }
  const inner: Context = context.tracksPaths ? { root: context.root, tracksPaths: false } : context;
  return walkSegments(path.segments, 0, start, null, inner, visit);
}

/** What `selectMember` and `selectIndex` would select, step after step; undefined for nothing. */
function readSteps(start: JsonValue, steps: readonly (string | number)[]): JsonValue | undefined {
  let value = start;
  for (const step of steps) {
    if (typeof step === 'string') {
      if (!isJsonObject(value) || !Object.hasOwn(value, step)) return undefined;
      value = value[step]!;
    } else {
      if (!Array.isArray(value)) return undefined;
      const absolute = step < 0 ? step + value.length : step;
      if (absolute < 0 || absolute >= value.length) return undefined;
      value = value[absolute]!;
    }
  }
  return value;
}

const COMPARATORS: Readonly<Record<ComparisonOperator, (left: JsonValue, right: JsonValue) => boolean>> = {
  '=': (l, r) => deepEqual(l, r),
  '!=': (l, r) => !deepEqual(l, r),
  '<': (l, r) => typeof l === 'number' && typeof r === 'number' && l < r,
  '<=': (l, r) => typeof l === 'number' && typeof r === 'number' && l <= r,
  '>': (l, r) => typeof l === 'number' && typeof r === 'number' && l > r,
  '>=': (l, r) => typeof l === 'number' && typeof r === 'number' && l >= r,
  contains,
};

/** `contains`: substring of a string, deep-equal element of an array, or sub-object of an object. */
function contains(left: JsonValue, right: JsonValue): boolean {
  if (typeof left === 'string') return typeof right === 'string' && left.includes(right);
  if (Array.isArray(left)) return left.some((element) => deepEqual(element, right));
  if (isJsonObject(left) && isJsonObject(right)) {
    return Object.keys(right).every((key) => Object.hasOwn(left, key) && deepEqual(left[key]!, right[key]!));
  }
  return false;
}

/** JSON equality: numbers by value, booleans never equal to numbers, members regardless of order. */
export function deepEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((element, i) => deepEqual(element, b[i]!));
  }
  if (!isJsonObject(a) || !isJsonObject(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && deepEqual(a[key]!, b[key]!));
}

/** Python's `bool()` of a JSON value. */
function isTruthy(value: JsonValue): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (isJsonObject(value)) return Object.keys(value).length > 0;
  return value !== null && value !== false && value !== 0 && value !== '';
}
