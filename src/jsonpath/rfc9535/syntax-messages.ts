/**
 * json-p3's syntax errors, said for a user: its token kinds (`TOKEN_COMMA`) and type names
 * (`NodesType`) become what they look like in the expression, and each message says what
 * was expected. Offsets json-p3 puts in its text count in the expression it was given, which
 * may not be the user's (see compile.ts): the position is reported separately, so they go.
 */
import type { JSONPathError } from 'json-p3';

const TOKEN_NAMES: Record<string, string> = {
  TOKEN_AND: "'&&'",
  TOKEN_COLON: "':'",
  TOKEN_COMMA: "','",
  TOKEN_CURRENT_VALUE: "'@'",
  TOKEN_DDOT: "'..'",
  TOKEN_DOT: "'.'",
  TOKEN_DOUBLE_QUOTE_STRING: 'a string',
  TOKEN_SINGLE_QUOTE_STRING: 'a string',
  TOKEN_EOF: 'the end of the expression',
  TOKEN_EQ: "'=='",
  TOKEN_FALSE: 'false',
  TOKEN_FILTER_START: "'?'",
  TOKEN_FUNCTION: 'a function',
  TOKEN_GE: "'>='",
  TOKEN_GT: "'>'",
  TOKEN_INDEX: 'an index',
  TOKEN_LBRACKET: "'['",
  TOKEN_LE: "'<='",
  TOKEN_LPAREN: "'('",
  TOKEN_LT: "'<'",
  TOKEN_NAME: 'a name',
  TOKEN_NE: "'!='",
  TOKEN_NOT: "'!'",
  TOKEN_NULL: 'null',
  TOKEN_OR: "'||'",
  TOKEN_RBRACKET: "']'",
  TOKEN_ROOT: "'$'",
  TOKEN_RPAREN: "')'",
  TOKEN_TRUE: 'true',
  TOKEN_WILD: "'*'",
};

const ARGUMENT_TYPES: Record<string, string> = {
  NodesType: 'a query',
  ValueType: 'a value (a literal or a query that selects at most one node)',
  LogicalType: 'a test (a comparison, a query or a function that answers true or false)',
};

const SELECTOR = "a selector (a name, an index, a slice, '*' or a filter '?')";

const token = (kind: string) => TOKEN_NAMES[kind] ?? kind;

/** Rewrites, tried in order on json-p3's message without its excerpt; the first that matches wins. */
const REWRITES: ReadonlyArray<readonly [RegExp, (...groups: string[]) => string]> = [
  // Between selectors, and between a function's arguments: the list may also end there.
  [/^expected token 'TOKEN_COMMA', found '(\w+)'$/, (found) => `expected ',' or a closing ']' or ')' but found ${token(found!)}`],
  [/^expected token '(\w+)', found '(\w+)'$/, (expected, found) => `expected ${token(expected!)} but found ${token(found!)}`],
  [/^unexpected token in bracketed selection '(\w+)'$/, (found) => `expected ${SELECTOR} but found ${token(found!)}`],
  [/^unexpected token '(.)' in bracketed selection$/, (found) => `expected ${SELECTOR} but found '${found}'`],
  [/^empty bracketed segment$/, () => `expected ${SELECTOR} between '[' and ']'`],
  [/^unexpected trailing comma$/, () => `expected ${SELECTOR} after ','`],
  [/^unclosed bracketed selection$/, () => "expected ']' to close the bracketed selection"],
  [/^unbalanced brackets$/, () => "unbalanced brackets: expected ')' to close the '(' before ']'"],
  [/^bald descendant segment$/, () => "expected a name, '*' or a bracketed selection after '..'"],
  [
    /^unexpected descendent selection token '(.*)'$/s,
    (found) => `expected a name, '*' or a bracketed selection after '..' but found '${found}'`,
  ],
  [/^unexpected shorthand selector '(.*)'$/s, (found) => `expected a member name after '.' but found '${found}'`],
  [/^unexpected whitespace after dot$/, () => "expected a member name right after '.' but found a space"],
  [/^unexpected filter selector token '(.*)'$/s, (found) => `expected a query, a literal or a function in the filter but found '${found}'`],
  [
    /^non-singular query is not comparable$/,
    () => 'expected a query that selects at most one node (such as @.a or @[0]) on each side of a comparison',
  ],
  [
    /^filter expression literals \((.*)\) must be compared$/s,
    (literal) => `expected a comparison: the literal ${literal} is not a test on its own`,
  ],
  [/^result of (\w+)\(\)\s+must be compared$/, (fn) => `expected a comparison: ${fn}() gives a value, not a test (e.g. ${fn}(@.a) == 1)`],
  [
    /^result of (\w+)\(\) is not comparable$/,
    (fn) => `${fn}() is a test and cannot be compared: expected it on its own, as in [?${fn}(@.a, 'x')]`,
  ],
  [
    /^(\w+)\(\) argument (\d+) must be of (\w+)$/,
    (fn, n, type) => `expected ${ARGUMENT_TYPES[type!] ?? type} as argument ${Number(n) + 1} of ${fn}()`,
  ],
  [/^unclosed string starting at index \d+$/, () => 'unclosed string: expected its closing quote'],
  [
    /^invalid escape$/,
    () => "invalid escape: expected \\b, \\f, \\n, \\r, \\t, \\/, \\\\, \\uXXXX or an escaped quote of the string's own kind",
  ],
  [
    /^unexpected low surrogate codepoint at index \d+$/,
    () => 'invalid \\u escape: a low surrogate (\\uDC00-\\uDFFF) must follow a high one',
  ],
  [/^unexpected codepoint at index \d+$/, () => 'invalid \\u escape: expected a low surrogate (\\uDC00-\\uDFFF) after a high surrogate'],
  [/^incomplete escape sequence at index \d+$/, () => 'incomplete escape: expected four hex digits after \\u'],
  [/^invalid character$/, () => 'invalid character in a string: control characters must be escaped'],
  [/^index out of range$/, () => 'index out of range: expected an integer from -(2^53-1) to 2^53-1'],
  [/^leading zero in index selector$/, () => 'an index cannot have a leading zero'],
  [/^trailing whitespace$/, () => 'expected the end of the expression but found a space'],
  [
    /^unexpected token '(\w+)'$/,
    (found) => `expected the end of the expression or a segment ('.', '..' or '[') but found ${token(found!)}`,
  ],
  [/^(.*) at index \d+$/s, (rest) => rest!],
];

/** json-p3's message for `error`, without the excerpt it appends, in the user's terms. */
export function syntaxMessage(error: JSONPathError): string {
  let message = withoutExcerpt(error);
  // The lexer's own message travels in an error token's value.
  if (error.token.kind === 'TOKEN_ERROR' && message === "unexpected token 'TOKEN_ERROR'") message = error.token.value;
  for (const [pattern, rewrite] of REWRITES) {
    const found = pattern.exec(message);
    if (found) return rewrite(...found.slice(1));
  }
  return message;
}

/** json-p3 appends `('<up to 9 characters around the error>':<index>)`, built this way. */
function withoutExcerpt(error: JSONPathError): string {
  const { input, index } = error.token;
  let excerpt: string;
  if (input.length <= 9) excerpt = input;
  else if (index > input.length - 5) excerpt = input.slice(input.length - 9);
  else if (index - 4 < 0) excerpt = input.slice(0, 9);
  else excerpt = input.slice(index - 4, index + 5);
  const tail = ` ('${excerpt}':${index})`;
  return error.message.endsWith(tail) ? error.message.slice(0, -tail.length) : error.message;
}
