/**
 * The callable subscripts of jsonpath2 (python-jsonpath2 `subscripts/callable.py`). A function
 * is applied to the current node with already evaluated arguments and gives one value, or
 * nothing (`undefined`) when the node or the arguments do not fit.
 *
 * Strings are measured and indexed in code points, as Python does.
 */
import { isJsonObject, type JsonValue } from '../../json.js';

export type FunctionName = 'length' | 'keys' | 'values' | 'entries' | 'charAt' | 'substring';

type JsonFunction = (current: JsonValue, args: readonly JsonValue[]) => JsonValue | undefined;

const FUNCTIONS: Readonly<Record<FunctionName, JsonFunction>> = {
  length(current, args) {
    if (args.length !== 0) return undefined;
    if (Array.isArray(current)) return current.length;
    return typeof current === 'string' ? codePoints(current).length : undefined;
  },
  keys(current, args) {
    if (args.length !== 0) return undefined;
    if (Array.isArray(current)) return current.map((_, i) => i);
    return isJsonObject(current) ? Object.keys(current) : undefined;
  },
  values(current, args) {
    if (args.length !== 0) return undefined;
    if (Array.isArray(current)) return current;
    return isJsonObject(current) ? Object.values(current) : undefined;
  },
  entries(current, args) {
    if (args.length !== 0) return undefined;
    if (Array.isArray(current)) return current.map((v, i) => [i, v]);
    return isJsonObject(current) ? Object.entries(current) : undefined;
  },
  charAt(current, args) {
    const [index] = args;
    if (typeof current !== 'string' || args.length !== 1 || !isInteger(index)) return undefined;
    const chars = codePoints(current);
    const at = index < 0 ? index + chars.length : index;
    return at >= 0 && at < chars.length ? chars[at]! : undefined;
  },
  substring(current, args) {
    const [from, to] = args;
    if (typeof current !== 'string' || args.length < 1 || args.length > 2) return undefined;
    if (!isInteger(from) || (args.length === 2 && !isInteger(to))) return undefined;
    const chars = codePoints(current);
    const end = isInteger(to) ? sliceBound(to, chars.length, 0, chars.length, chars.length) : chars.length;
    return chars.slice(sliceBound(from, chars.length, 0, chars.length, 0), end).join('');
  },
};

export function isFunctionName(name: string): name is FunctionName {
  return Object.hasOwn(FUNCTIONS, name);
}

export const FUNCTION_NAMES: readonly string[] = Object.keys(FUNCTIONS);

export function applyFunction(name: FunctionName, current: JsonValue, args: readonly JsonValue[]): JsonValue | undefined {
  return FUNCTIONS[name](current, args);
}

/**
 * An integer argument or subscript key. Python tests `isinstance(x, int)`: booleans are excluded
 * here on purpose; JavaScript cannot tell `1.0` from `1`, so integral numbers count.
 */
export function isInteger(value: JsonValue | undefined): value is number {
  return typeof value === 'number' && Number.isInteger(value);
}

/** Python's reading of a slice bound: negative counts from the end, then clamped to [low, high]. */
export function sliceBound(bound: number | null, length: number, low: number, high: number, absent: number): number {
  if (bound === null) return absent;
  const absolute = bound < 0 ? bound + length : bound;
  return Math.min(Math.max(absolute, low), high);
}

function codePoints(text: string): string[] {
  return Array.from(text);
}
