import { compileJsonPath2 } from './jsonpath2/index.js';
import { JsonPathSyntaxError } from './errors.js';
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
  if (source.trim() === '') throw new JsonPathSyntaxError(source, 0, 'expected a JSONPath expression but found nothing', DIALECT_ORDER[mode][0]!);
  const expression = rootRelative(source);
  const shift = expression.length - source.length;
  let furthest: JsonPathSyntaxError | undefined;
  for (const dialect of DIALECT_ORDER[mode]) {
    try {
      const query = COMPILERS[dialect](expression);
      // Neither dialect's query uses `this`: its functions can be taken as they are.
      return { ...query, source, expression, dialect };
    } catch (error) {
      if (!(error instanceof JsonPathSyntaxError)) throw error;
      if (!furthest || error.position > furthest.position) furthest = error;
    }
  }
  const position = Math.max(0, furthest!.position - shift);
  throw new JsonPathSyntaxError(source, position, furthest!.detail, furthest!.dialect);
}

/** `data.files[0]` means `$.data.files[0]`; `[0]` and `..x` hang off the root directly. */
function rootRelative(source: string): string {
  const start = source.trimStart();
  if (start.startsWith('$')) return source;
  return (start.startsWith('[') || start.startsWith('.') ? '$' : '$.') + start;
}
