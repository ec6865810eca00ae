import { JSONPathEnvironment, JSONPathError, type JSONPathQuery, type JSONValue } from 'json-p3';
import { type JsonValue, MAX_DOCUMENT_DEPTH } from '../../json.js';
import { JsonPathSyntaxError } from '../errors.js';
import { normalizedPath } from '../normalized-path.js';
import type { DialectQuery, Selection } from '../types.js';
import { firstNodeTest } from './first-node.js';
import { IRegexpMatch, IRegexpSearch } from './regex-functions.js';
import { exactRequirement, queryRequirement } from './requirement.js';
import { syntaxMessage } from './syntax-messages.js';

// strict: RFC 9535 only; json-p3's own extensions (keys `~`, current key `#`) are refused.
// Documents are at most MAX_DOCUMENT_DEPTH deep; `..` must reach their bottom, never fail.
const environment = new JSONPathEnvironment({ strict: true, maxRecursionDepth: 2 * MAX_DOCUMENT_DEPTH });
// match() and search() on a linear-time engine instead of json-p3's, which hands patterns to
// JavaScript's backtracking RegExp (see regex-functions.ts).
environment.functionRegister.set('match', new IRegexpMatch());
environment.functionRegister.set('search', new IRegexpSearch());

/** Compiles an RFC 9535 query with json-p3, which passes the whole compliance suite. */
export function compileRfc9535(expression: string): DialectQuery {
  let query: JSONPathQuery;
  try {
    query = environment.compile(expression);
  } catch (error) {
    if (error instanceof JSONPathError) throw syntaxError(expression, error);
    throw error;
  }
  const exact = exactRequirement(query);
  const hasNode = firstNodeTest(query);
  return {
    requirement: exact ?? queryRequirement(query, []),
    exact: exact !== undefined,
    // hasNode itself, not a closure here: one would share this scope with `select` and keep the
    // whole query (tokens and all) alive for as long as an index holds `matches`.
    matches: hasNode as (document: JsonValue) => boolean,
    select: (document: JsonValue): Selection => {
      const nodes = query.query(document as JSONValue).nodes;
      return {
        values: nodes.map((n) => n.value as JsonValue),
        paths: nodes.map((n) => normalizedPath(n.location)),
      };
    },
  };
}

function syntaxError(expression: string, error: JSONPathError): JsonPathSyntaxError {
  return new JsonPathSyntaxError(expression, error.token.index, syntaxMessage(error), 'rfc9535');
}
