import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JsonPathSyntaxError } from '../../src/jsonpath/errors.js';
import { compileJsonPath2 } from '../../src/jsonpath/jsonpath2/index.js';

function syntaxError(expression: string): JsonPathSyntaxError {
  try {
    compileJsonPath2(expression);
  } catch (error) {
    assert.ok(error instanceof JsonPathSyntaxError, `not a JsonPathSyntaxError: ${String(error)}`);
    return error;
  }
  assert.fail(`${expression} compiled`);
}

const FUNCTIONS = 'length, keys, values, entries, charAt, substring';

/** [expression, position, detail] */
const ERRORS: [string, number, string][] = [
  ['', 0, "expected '$' but found end of input"],
  ['@.x', 0, "expected '$' but found '@'"],
  ['$.', 2, "expected a name after '.' but found end of input"],
  ['$.[0]', 2, "expected a name after '.' but found '['"],
  ['$..', 3, "expected a name, '*' or '[' after '..' but found end of input"],
  ['$.a b', 4, "expected '.', '..', '[' or end of input but found 'b'"],
  ['$.data[0=1]', 8, "expected ']' or ',' but found '='"],
  ['$[?(@.value="Blah")', 19, "expected ']' or ',' but found end of input"],
  ['$.data[]', 7, "expected a string, an integer, a slice, '*', '?(', a path or a function call but found ']'"],
  ['$.data[1.5]', 7, "expected an integer but found '1.5'"],
  ['$.data[1e2]', 7, "expected an integer but found '1e2'"],
  ['$.data[1:2:1.5]', 11, "expected an integer but found '1.5'"],
  ['$[01]', 3, "expected ']' or ',' but found '1'"],
  ['$.foo(1)', 2, `expected a function (${FUNCTIONS}) but found 'foo'`],
  ['$[foo()]', 2, `expected a function (${FUNCTIONS}) but found 'foo'`],
  ['$[foo]', 5, "expected '(' after 'foo' but found ']'"],
  ['$[true]', 6, "expected '(' after 'true' but found ']'"],
  ['$.a.substring(1 2)', 16, "expected ',' or ')' but found '2'"],
  ['$[?(@.a == 1)]', 9, "expected a path, a JSON value, 'not' or '(' but found '='"],
  ['$[?(@.a 1)]', 8, "expected a comparison operator, 'and', 'or' or ')' but found '1'"],
  ['$[?(@.a = 1 2)]', 12, "expected 'and', 'or' or ')' but found '2'"],
  ['$[?(@.a = 1 and)]', 15, "expected a path, a JSON value, 'not' or '(' but found ')'"],
  ['$[?(@.a = tru)]', 10, "expected a path, a JSON value, 'not' or '(' but found 'tru'"],
  ['$[?(@.a = 1]', 11, "expected 'and', 'or' or ')' but found ']'"],
  ['$[?@.a]', 3, "expected '(' after '?' but found '@'"],
  ['$[?((@.a) = 1)]', 10, "expected 'and', 'or' or ')' but found '='"],
  ['$[?(@.a = {"k" 1})]', 15, "expected ':' after an object key but found '1'"],
  ['$[?(@.a = {k: 1})]', 11, "expected a string key but found 'k'"],
  ['$[?(@.a = [1, 2)]', 15, "expected ',' or ']' but found ')'"],
  ['$[?(@.a = -)]', 11, "expected a digit after '-' but found ')'"],
  ['$["abc]', 2, "unterminated string: expected a closing '\"'"],
  ['$[?(@.b = "x\\q")]', 12, 'invalid escape in string: expected one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX'],
  ['$["a\u0001"]', 4, "expected a character or '\"' but found a control character in a string"],
  ["$['a']", 2, "unexpected character '''"],
  ['$.パソコン', 2, "unexpected character 'パ'"],
  ['$[?(@.a ! 1)]', 8, "unexpected character '!'"],
];

describe('jsonpath2 syntax errors', () => {
  for (const [expression, position, detail] of ERRORS) {
    it(`${JSON.stringify(expression)} stops at ${position}`, () => {
      const error = syntaxError(expression);
      assert.equal(error.dialect, 'jsonpath2');
      assert.equal(error.expression, expression);
      assert.equal(error.position, position);
      assert.equal(error.detail, detail);
    });
  }

  it('reports where parsing stopped, not a bad character further on', () => {
    const error = syntaxError('$.a b !');
    assert.equal(error.position, 4);
  });

  it('accepts escapes in strings and keeps them verbatim', () => {
    const query = compileJsonPath2('$["a\\"b\\\\c\\/\\n\\u00e9"]');
    assert.deepEqual(query.select({ 'a\\"b\\\\c\\/\\n\\u00e9': 1 }).values, [1]);
  });
});
