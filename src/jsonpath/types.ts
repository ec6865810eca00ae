/**
 * Glossary
 * - expression: the JSONPath text a user wrote in a subscription.
 * - dialect: the language the expression was compiled in: RFC 9535 or Pacifica jsonpath2.
 * - node: a value inside the document together with its location (the member names and
 *   array indices that lead to it from the root).
 * - normalized path: a location written as RFC 9535 section 2.7 prescribes, e.g. `$['data'][0]`.
 */
import type { JsonValue } from '../json.js';

export type Dialect = 'rfc9535' | 'jsonpath2';

/** `NOTIFICATIONS_JSONPATH_DIALECT`: which dialects to try, in which order. */
export type DialectMode = 'auto' | 'jsonpath2-first' | 'rfc9535' | 'jsonpath2';
export const DIALECT_MODES: readonly DialectMode[] = ['auto', 'jsonpath2-first', 'rfc9535', 'jsonpath2'];

export type Location = ReadonlyArray<string | number>;

/** The selected values and, index for index, their normalized paths. */
export interface Selection {
  values: JsonValue[];
  paths: string[];
}

/** One dialect's compiled form of an expression. Nothing is parsed when it is evaluated. */
export interface DialectQuery {
  /** True when the expression selects at least one node; stops at the first one. */
  matches(document: JsonValue): boolean;
  select(document: JsonValue): Selection;
  /** A necessary condition for `matches`, for the subscription index (see requirement.ts). */
  readonly requirement: import('./requirement.js').Requirement;
  /**
   * True when `requirement` holds exactly when `matches` does. For one key, or all of several
   * keys, the index then answers without evaluating the expression; `always` (`$`) gives no
   * key, so such an expression is evaluated for every event anyway.
   */
  readonly exact: boolean;
}
