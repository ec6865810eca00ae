import { JsonPathSyntaxError } from './errors.js';
import { compileJsonPath2 } from './jsonpath2/index.js';
import { compileRfc9535 } from './rfc9535/index.js';
import type { Dialect, DialectMode, DialectQuery } from './types.js';

export interface CompiledJsonPath extends DialectQuery {
  /** The expression as the user wrote it. */
  readonly source: string;
  /** What was compiled: `source`, made root-relative when it did not start with `$`. */
  readonly expression: string;
  readonly dialect: Dialect;
}

const COMPILERS: Record<Dialect, (expression: string) => DialectQuery> = {
  rfc9535: compileRfc9535,
  jsonpath2: compileJsonPath2,
};

/**
 * Both parsers and json-p3's evaluator recurse once per nesting level and per `!`: these
 * bounds keep every expression far from the stack's end, however warm the process.
 */
const MAX_EXPRESSION_LENGTH = 2_048;
const MAX_EXPRESSION_NESTING = 32;

const DIALECT_ORDER: Record<DialectMode, readonly Dialect[]> = {
  auto: ['rfc9535', 'jsonpath2'],
  'jsonpath2-first': ['jsonpath2', 'rfc9535'],
  rfc9535: ['rfc9535'],
  jsonpath2: ['jsonpath2'],
};

/**
 * Compiles `source` in the first dialect of `mode` that accepts it. Throws JsonPathSyntaxError
 * when none does, with the error of the dialect that read furthest (the likelier intent).
 */
export function compileJsonPath(source: string, mode: DialectMode = 'auto'): CompiledJsonPath {
  const first = DIALECT_ORDER[mode][0]!;
  if (source.trim() === '') throw new JsonPathSyntaxError(source, 0, 'expected a JSONPath expression but found nothing', first);
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new JsonPathSyntaxError(
      source,
      MAX_EXPRESSION_LENGTH,
      `expected at most ${MAX_EXPRESSION_LENGTH} characters but found ${source.length}`,
      first,
    );
  }
  const tooDeep = nestingBeyond(source, MAX_EXPRESSION_NESTING);
  if (tooDeep !== undefined) {
    throw new JsonPathSyntaxError(
      source,
      tooDeep,
      `expected brackets and parentheses nested at most ${MAX_EXPRESSION_NESTING} deep`,
      first,
    );
  }
  const expression = rootRelative(source);
  const shift = expression.length - source.length;
  let furthest: JsonPathSyntaxError | undefined;
  for (const dialect of DIALECT_ORDER[mode]) {
    try {
      const query = COMPILERS[dialect](expression);
      // Neither dialect's query uses `this`: its functions can be taken as they are.
      return { ...query, source, expression, dialect };
    } catch (caught) {
      // The stack ran out after all (the limits above make that unlikely): still a 400.
      const error =
        caught instanceof RangeError
          ? new JsonPathSyntaxError(expression, 0, 'expected a simpler expression: too deeply nested to read', dialect)
          : caught;
      if (!(error instanceof JsonPathSyntaxError)) throw error;
      if (!furthest || error.position > furthest.position) furthest = error;
    }
  }
  const position = Math.max(0, furthest!.position - shift);
  throw new JsonPathSyntaxError(source, position, furthest!.detail, furthest!.dialect);
}

/** Where `[` or `(` opens one level more than `limit`, outside quoted strings; undefined if nowhere. */
function nestingBeyond(source: string, limit: number): number | undefined {
  let depth = 0;
  let quote: string | undefined;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i];
    if (quote !== undefined) {
      if (ch === '\\') i++;
      else if (ch === quote) quote = undefined;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '[' || ch === '(') {
      if (++depth > limit) return i;
    } else if (ch === ']' || ch === ')') depth--;
  }
  return undefined;
}

/** `data.files[0]` means `$.data.files[0]`; `[0]` and `..x` hang off the root directly. */
function rootRelative(source: string): string {
  const start = source.trimStart();
  if (start.startsWith('$')) return source;
  return (start.startsWith('[') || start.startsWith('.') ? '$' : '$.') + start;
}
