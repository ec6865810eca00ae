/**
 * The Pacifica jsonpath2 dialect (python-jsonpath2), compiled once into a `DialectQuery`.
 */

import type { JsonValue } from '../../json.js';
import type { DialectQuery, Selection } from '../types.js';
import { evaluate, renderTrail } from './evaluator.js';
import { parseJsonPath2 } from './parser.js';
import { deriveRequirement, exactRequirement } from './requirement.js';

/** Throws `JsonPathSyntaxError` (dialect `jsonpath2`) when the expression is not jsonpath2. */
export function compileJsonPath2(expression: string): DialectQuery {
  const query = parseJsonPath2(expression);
  const exact = exactRequirement(query);
  return {
    requirement: exact ?? deriveRequirement(query),
    exact: exact !== undefined,
    matches(document: JsonValue): boolean {
      let found = false;
      evaluate(query, document, false, () => (found = true));
      return found;
    },
    select(document: JsonValue): Selection {
      const values: JsonValue[] = [];
      const paths: string[] = [];
      evaluate(query, document, true, (value, trail) => {
        values.push(value);
        paths.push(renderTrail(trail));
        return false;
      });
      return { values, paths };
    },
  };
}
