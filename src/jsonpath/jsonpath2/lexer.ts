/**
 * Tokens of the jsonpath2 grammar (python-jsonpath2 `JSONPath.g4`), produced on demand so that
 * an error is reported where parsing stopped, not at a bad character further on.
 */
import { JsonPathSyntaxError } from '../errors.js';

export type TokenKind =
  | '$'
  | '@'
  | '.'
  | '..'
  | '*'
  | '['
  | ']'
  | '('
  | ')'
  | '{'
  | '}'
  | ','
  | ':'
  | '?'
  | '='
  | '!='
  | '<'
  | '<='
  | '>'
  | '>='
  | 'string'
  | 'number'
  | 'word'
  | 'end';

export interface Token {
  readonly kind: TokenKind;
  /** The source text; for a string, the text between the quotes, verbatim (no escape processing). */
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const PUNCTUATION = new Set<string>(['$', '@', '*', '[', ']', '(', ')', '{', '}', ',', ':', '?', '=']);
const WHITESPACE = new Set<string>([' ', '\t', '\n', '\r']);
const SIMPLE_ESCAPES = new Set<string>(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

export function syntaxError(expression: string, position: number, detail: string): JsonPathSyntaxError {
  return new JsonPathSyntaxError(expression, position, detail, 'jsonpath2');
}

export function describeToken(token: Token): string {
  if (token.kind === 'end') return 'end of input';
  if (token.kind === 'string') return `'"${token.text}"'`;
  return `'${token.text}'`;
}

export class Lexer {
  private offset = 0;
  private lookahead: Token | null = null;

  constructor(readonly expression: string) {}

  peek(): Token {
    this.lookahead ??= this.scan();
    return this.lookahead;
  }

  next(): Token {
    const token = this.peek();
    this.lookahead = null;
    return token;
  }

  private scan(): Token {
    const source = this.expression;
    while (this.offset < source.length && WHITESPACE.has(source[this.offset]!)) this.offset++;
    const start = this.offset;
    if (start >= source.length) return { kind: 'end', text: '', start, end: start };
    const ch = source[start]!;
    if (ch === '.') return this.take(source.startsWith('..', start) ? '..' : '.', start);
    if (ch === '<' || ch === '>') return this.take((source[start + 1] === '=' ? `${ch}=` : ch) as TokenKind, start);
    if (ch === '!' && source[start + 1] === '=') return this.take('!=', start);
    if (PUNCTUATION.has(ch)) return this.take(ch as TokenKind, start);
    if (ch === '"') return this.scanString(start);
    if (ch === '-' || isDigit(ch)) return this.scanNumber(start);
    if (isWordStart(ch)) return this.scanWord(start);
    throw syntaxError(source, start, `unexpected character '${String.fromCodePoint(source.codePointAt(start)!)}'`);
  }

  private take(kind: TokenKind, start: number): Token {
    this.offset = start + kind.length;
    return { kind, text: kind, start, end: this.offset };
  }

  private scanWord(start: number): Token {
    let end = start + 1;
    while (end < this.expression.length && isWordPart(this.expression[end]!)) end++;
    this.offset = end;
    return { kind: 'word', text: this.expression.slice(start, end), start, end };
  }

  /** JSON number syntax: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? (0 | [1-9][0-9]*))?`. */
  private scanNumber(start: number): Token {
    const source = this.expression;
    let end = start;
    if (source[end] === '-') end++;
    if (source[end] === '0') end++;
    else if (isDigit(source[end])) end = skipDigits(source, end);
    else throw syntaxError(source, end, `expected a digit after '-' but found ${describeChar(source, end)}`);
    if (source[end] === '.' && isDigit(source[end + 1])) end = skipDigits(source, end + 1);
    end = this.scanExponent(end);
    this.offset = end;
    return { kind: 'number', text: source.slice(start, end), start, end };
  }

  /** The grammar's exponent is `[eE] [+-]? INT`: no leading zeros there either. */
  private scanExponent(from: number): number {
    const source = this.expression;
    if (source[from] !== 'e' && source[from] !== 'E') return from;
    let end = from + 1;
    if (source[end] === '+' || source[end] === '-') end++;
    if (source[end] === '0') return end + 1;
    if (isDigit(source[end])) return skipDigits(source, end);
    throw syntaxError(source, end, `expected a digit in the exponent but found ${describeChar(source, end)}`);
  }

  private scanString(start: number): Token {
    const source = this.expression;
    let end = start + 1;
    for (;;) {
      const ch = source[end];
      if (ch === undefined) throw syntaxError(source, start, "unterminated string: expected a closing '\"'");
      if (ch === '"') break;
      if (ch === '\\') end = this.skipEscape(end);
      else if (ch.charCodeAt(0) < 0x20) {
        throw syntaxError(source, end, "expected a character or '\"' but found a control character in a string");
      } else end++;
    }
    this.offset = end + 1;
    return { kind: 'string', text: source.slice(start + 1, end), start, end: end + 1 };
  }

  /** Validates the escape at `at` (a backslash) and returns the offset after it. */
  private skipEscape(at: number): number {
    const source = this.expression;
    const ch = source[at + 1];
    if (ch !== undefined && SIMPLE_ESCAPES.has(ch)) return at + 2;
    if (ch === 'u' && /^[0-9a-fA-F]{4}$/.test(source.slice(at + 2, at + 6))) return at + 6;
    throw syntaxError(source, at, 'invalid escape in string: expected one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX');
  }
}

function isDigit(ch: string | undefined): boolean {
  return ch !== undefined && ch >= '0' && ch <= '9';
}

function isWordStart(ch: string): boolean {
  return ch === '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

function isWordPart(ch: string): boolean {
  return isWordStart(ch) || isDigit(ch);
}

function skipDigits(source: string, from: number): number {
  let end = from;
  while (isDigit(source[end])) end++;
  return end;
}

function describeChar(source: string, at: number): string {
  return at >= source.length ? 'end of input' : `'${source[at]}'`;
}
