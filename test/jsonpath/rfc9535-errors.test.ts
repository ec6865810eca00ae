import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileJsonPath, JsonPathSyntaxError } from '../../src/jsonpath/index.js';
import { JSONPATH_CTS_SKIP, jsonpathCts } from '../support/fixtures.js';

function syntaxError(expression: string): JsonPathSyntaxError {
  try {
    compileJsonPath(expression, 'rfc9535');
  } catch (error) {
    assert.ok(error instanceof JsonPathSyntaxError, `not a JsonPathSyntaxError: ${String(error)}`);
    return error;
  }
  assert.fail(`${expression} compiled`);
}

/** [expression, position, detail] */
const ERRORS: [string, number, string][] = [
  ['$ ', 2, 'expected the end of the expression but found a space'],
  ['$.&', 2, "expected a member name after '.' but found '&'"],
  ['$. a', 3, "expected a member name right after '.' but found a space"],
  ['$..', 3, "expected a name, '*' or a bracketed selection after '..'"],
  ['$.. a', 3, "expected a name, '*' or a bracketed selection after '..' but found ' '"],
  ['$[0 2]', 4, "expected ',' or a closing ']' or ')' but found an index"],
  ["$.a['b':1]", 7, "expected ',' or a closing ']' or ')' but found ':'"],
  ['$.data[?@.name.length() > 3]', 21, "expected ',' or a closing ']' or ')' but found '('"],
  ['$.data[0].name.toUpperCase()', 26, "expected '.', '..' or a bracketed selection, found '('"],
  ['$[]', 1, "expected a selector (a name, an index, a slice, '*' or a filter '?') between '[' and ']'"],
  ['$[,0]', 2, "expected a selector (a name, an index, a slice, '*' or a filter '?') but found ','"],
  ['$[0,]', 4, "expected a selector (a name, an index, a slice, '*' or a filter '?') after ','"],
  ['$[@.a]', 2, "expected a selector (a name, an index, a slice, '*' or a filter '?') but found '@'"],
  ['$.a[?@.b == 1', 13, "expected ']' to close the bracketed selection"],
  ["$[?@.a == 'x' && (]", 18, "unbalanced brackets: expected ')' to close the '(' before ']'"],
  ['$[?@.a==+1]', 8, "expected a query, a literal or a function in the filter but found '+'"],
  ['$[?@[0:0]==0]', 3, 'expected a query that selects at most one node (such as @.a or @[0]) on each side of a comparison'],
  ['$[?true]', 3, 'expected a comparison: the literal true is not a test on its own'],
  ["$[?'abc']", 4, "expected a comparison: the literal 'abc' is not a test on its own"],
  ['$[?count(@..*)]', 3, 'expected a comparison: count() gives a value, not a test (e.g. count(@.a) == 1)'],
  ['$[?count(1)>2]', 9, 'expected a query as argument 1 of count()'],
  ['$[?length(@.*)<3]', 10, 'expected a value (a literal or a query that selects at most one node) as argument 1 of length()'],
  ["$[?match(@.a, 'a.*')==true]", 3, "match() is a test and cannot be compared: expected it on its own, as in [?match(@.a, 'x')]"],
  ['$[?match(@.a)==1]', 3, 'match() takes 2 arguments, 1 given'],
  ['$[01]', 2, 'an index cannot have a leading zero'],
  ['$[-9007199254740992]', 2, 'index out of range: expected an integer from -(2^53-1) to 2^53-1'],
  ['$["\u0001"]', 3, 'invalid character in a string: control characters must be escaped'],
  ['$["\\u"]', 3, 'incomplete escape: expected four hex digits after \\u'],
  ['$["\\uDC00"]', 3, 'invalid \\u escape: a low surrogate (\\uDC00-\\uDFFF) must follow a high one'],
  ['$.a["b', 6, 'unclosed string: expected its closing quote'],
];

describe('RFC 9535 syntax errors', () => {
  for (const [expression, position, detail] of ERRORS) {
    it(`${JSON.stringify(expression)}: at ${position}, ${detail}`, () => {
      const error = syntaxError(expression);
      assert.equal(error.dialect, 'rfc9535');
      assert.equal(error.detail, detail);
      assert.equal(error.position, position);
    });
  }

  it('count positions in the text the user wrote when it was made root-relative, and no other offset is quoted', () => {
    const error = syntaxError('x["a');
    assert.equal(error.position, 4);
    assert.equal(error.detail, 'unclosed string: expected its closing quote');
  });

  it(
    "never show json-p3's token kinds, type names, offsets or excerpt (every invalid selector of the compliance suite)",
    { skip: JSONPATH_CTS_SKIP },
    () => {
      const invalid = jsonpathCts().filter((t) => t.invalid_selector);
      assert.ok(invalid.length > 200);
      for (const selector of [...invalid.map((t) => t.selector), ...ERRORS.map(([e]) => e)]) {
        const { detail } = syntaxError(selector);
        assert.doesNotMatch(detail, /TOKEN_|[A-Z][a-z]+Type\b|\bindex \d|':\d+\)$|\s{2}/, `${JSON.stringify(selector)}: ${detail}`);
      }
    },
  );
});
