/**
 * Recursive-descent parser for the jsonpath2 grammar (python-jsonpath2 `JSONPath.g4`, newest
 * form: both sides of a comparison may be a path or a JSON value; function calls), plus our
 * `contains` operator. One method per grammar rule.
 *
 * Note the grammar's precedence, kept on purpose: `or` binds tighter than `and`
 * (`a and b or c` is `a and (b or c)`).
 */
import type { JsonValue } from '../../json.js';
import type { ComparisonOperator, FilterExpression, FunctionCall, Operand, PathExpression, Segment, Selector } from './ast.js';
import { FUNCTION_NAMES, isFunctionName } from './functions.js';
import { describeToken, Lexer, syntaxError, type Token, type TokenKind } from './lexer.js';

const SYMBOL_OPERATORS = new Set<TokenKind>(['=', '!=', '<', '<=', '>', '>=']);
const INTEGER = /^-?(?:0|[1-9][0-9]*)$/;

export function parseJsonPath2(expression: string): PathExpression {
  return new Parser(expression).parseQuery();
}

class Parser {
  private readonly lexer: Lexer;
  /** End offset of the last consumed token, to cut function arguments out of the source. */
  private lastEnd = 0;
  /** Whether the last operand parsed in a filter stood alone (no comparison operator after it). */
  private lastOperandWasBare = false;

  constructor(private readonly expression: string) {
    this.lexer = new Lexer(expression);
  }

  parseQuery(): PathExpression {
    this.expect('$', "'$'");
    const segments = this.parseSegments();
    const token = this.lexer.peek();
    if (token.kind !== 'end') throw this.unexpected(token, "'.', '..', '[' or end of input");
    return { origin: 'root', segments, singular: singularSteps(segments) };
  }

  // ---- paths ----------------------------------------------------------------------------

  /** `jsonpath_`: `$` or `@` followed by segments; the caller has checked the first token. */
  private parseNestedPath(): PathExpression {
    const origin = this.advance().kind === '$' ? 'root' : 'current';
    const segments = this.parseSegments();
    return { origin, segments, singular: singularSteps(segments) };
  }

  private parseSegments(): Segment[] {
    const segments: Segment[] = [];
    for (;;) {
      const kind = this.lexer.peek().kind;
      if (kind === '.') segments.push(this.parseDotSegment());
      else if (kind === '..') segments.push(this.parseDescendantSegment());
      else if (kind === '[') segments.push({ kind: 'child', selectors: this.parseBracketedSelectors() });
      else return trimmed(segments);
    }
  }

  private parseDotSegment(): Segment {
    this.advance();
    const token = this.lexer.peek();
    if (token.kind !== 'word' && token.kind !== '*') throw this.unexpected(token, "a name after '.'");
    return { kind: 'child', selectors: [this.parseBareword()] };
  }

  private parseDescendantSegment(): Segment {
    this.advance();
    const token = this.lexer.peek();
    if (token.kind === '[') return { kind: 'descendant', selectors: this.parseBracketedSelectors() };
    if (token.kind !== 'word' && token.kind !== '*') throw this.unexpected(token, "a name, '*' or '[' after '..'");
    return { kind: 'descendant', selectors: [this.parseBareword()] };
  }

  /** `subscriptableBareword`: a member name (keywords allowed), `*`, or a function call. */
  private parseBareword(): Selector {
    const token = this.advance();
    if (token.kind === '*') return { kind: 'wildcard' };
    if (this.lexer.peek().kind === '(') return this.parseCall(token);
    return { kind: 'name', name: token.text };
  }

  /** `subscriptables`: `[ subscriptable (, subscriptable)* ]`. */
  private parseBracketedSelectors(): Selector[] {
    this.advance();
    const selectors = [this.parseSubscriptable()];
    for (;;) {
      const token = this.advance();
      if (token.kind === ']') return trimmed(selectors);
      if (token.kind !== ',') throw this.unexpected(token, "']' or ','");
      selectors.push(this.parseSubscriptable());
    }
  }

  private parseSubscriptable(): Selector {
    const token = this.lexer.peek();
    switch (token.kind) {
      case 'string':
        this.advance();
        return { kind: 'name', name: token.text };
      case 'number':
        return this.parseIndexOrSlice();
      case ':':
        return this.parseSliceAfterStart(null);
      case '*':
        this.advance();
        return { kind: 'wildcard' };
      case '?':
        return this.parseFilter();
      case '$':
      case '@':
        return { kind: 'nested', path: this.parseNestedPath() };
      case 'word':
        return this.parseBracketedCall();
      default:
        throw this.unexpected(token, "a string, an integer, a slice, '*', '?(', a path or a function call");
    }
  }

  private parseIndexOrSlice(): Selector {
    const index = this.parseInteger();
    if (this.lexer.peek().kind === ':') return this.parseSliceAfterStart(index);
    return { kind: 'index', index };
  }

  /** `sliceable`: `: end? (: step?)?`, the start (if any) already read. */
  private parseSliceAfterStart(start: number | null): Selector {
    this.expect(':', "':'");
    const end = this.parseOptionalInteger();
    let step: number | null = null;
    if (this.lexer.peek().kind === ':') {
      this.advance();
      step = this.parseOptionalInteger();
    }
    return { kind: 'slice', start, end, step };
  }

  private parseOptionalInteger(): number | null {
    return this.lexer.peek().kind === 'number' ? this.parseInteger() : null;
  }

  private parseInteger(): number {
    const token = this.advance();
    if (token.kind !== 'number' || !INTEGER.test(token.text)) throw this.unexpected(token, 'an integer');
    return Number(token.text);
  }

  private parseFilter(): Selector {
    this.advance();
    this.expect('(', "'(' after '?'");
    const expression = this.parseExpression();
    this.expectClosingParenthesis();
    return { kind: 'filter', expression };
  }

  /** Inside brackets a word can only start a function call (`[length()]`). */
  private parseBracketedCall(): Selector {
    const name = this.advance();
    const token = this.lexer.peek();
    if (token.kind !== '(') throw this.unexpected(token, `'(' after '${name.text}'`);
    return this.parseCall(name);
  }

  /** `ID subscriptableArguments`; the name is consumed, the next token is `(`. */
  private parseCall(name: Token): FunctionCall {
    if (!isFunctionName(name.text)) throw this.unexpected(name, `a function (${FUNCTION_NAMES.join(', ')})`);
    this.advance();
    const args: Operand[] = [];
    const argTexts: string[] = [];
    if (this.lexer.peek().kind !== ')') {
      for (;;) {
        const start = this.lexer.peek().start;
        args.push(this.parseOperand());
        argTexts.push(this.expression.slice(start, this.lastEnd));
        if (this.lexer.peek().kind !== ',') break;
        this.advance();
      }
    }
    const close = this.advance();
    if (close.kind !== ')') throw this.unexpected(close, "',' or ')'");
    return { kind: 'call', name: name.text, args, text: `${name.text}(${argTexts.join(',')})` };
  }

  // ---- filter expressions -----------------------------------------------------------------

  private parseExpression(): FilterExpression {
    return this.parseAnd();
  }

  /** `andExpression : orExpression ( AND andExpression )?` */
  private parseAnd(): FilterExpression {
    const operands = [this.parseOr()];
    while (this.atWord('and')) {
      this.advance();
      operands.push(this.parseOr());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'and', operands: trimmed(operands) };
  }

  /** `orExpression : notExpression ( OR orExpression )?` */
  private parseOr(): FilterExpression {
    const operands = [this.parseNot()];
    while (this.atWord('or')) {
      this.advance();
      operands.push(this.parseNot());
    }
    return operands.length === 1 ? operands[0]! : { kind: 'or', operands: trimmed(operands) };
  }

  /** `notExpression : NOT notExpression | ( expression ) | jsonpath__ ( op jsonpath__ )?` */
  private parseNot(): FilterExpression {
    if (this.atWord('not')) {
      this.advance();
      return { kind: 'not', operand: this.parseNot() };
    }
    if (this.lexer.peek().kind === '(') {
      this.advance();
      const inner = this.parseExpression();
      this.expectClosingParenthesis();
      this.lastOperandWasBare = false;
      return inner;
    }
    const left = this.parseOperand();
    const operator = this.parseOptionalOperator();
    this.lastOperandWasBare = operator === null;
    if (operator === null) return { kind: 'test', operand: left };
    return { kind: 'comparison', operator, left, right: this.parseOperand() };
  }

  private parseOptionalOperator(): ComparisonOperator | null {
    const token = this.lexer.peek();
    if (SYMBOL_OPERATORS.has(token.kind)) {
      this.advance();
      return token.kind as ComparisonOperator;
    }
    if (this.atWord('contains')) {
      this.advance();
      return 'contains';
    }
    return null;
  }

  private expectClosingParenthesis(): void {
    const token = this.advance();
    if (token.kind === ')') return;
    const expected = this.lastOperandWasBare ? "a comparison operator, 'and', 'or' or ')'" : "'and', 'or' or ')'";
    throw this.unexpected(token, expected);
  }

  /** `jsonpath__`: a path from `$` or `@`, or a JSON value. */
  private parseOperand(): Operand {
    const kind = this.lexer.peek().kind;
    if (kind === '$' || kind === '@') return { kind: 'path', path: this.parseNestedPath() };
    return { kind: 'value', value: this.parseValue("a path, a JSON value, 'not' or '('") };
  }

  // ---- JSON values ------------------------------------------------------------------------

  private parseValue(expected = 'a JSON value'): JsonValue {
    const token = this.lexer.peek();
    if (token.kind === 'string') return this.advance().text;
    if (token.kind === 'number') return Number(this.advance().text);
    if (token.kind === '{') return this.parseObject();
    if (token.kind === '[') return this.parseArray();
    if (token.kind === 'word') {
      if (token.text === 'true' || token.text === 'false' || token.text === 'null') {
        this.advance();
        return token.text === 'null' ? null : token.text === 'true';
      }
    }
    throw this.unexpected(token, expected);
  }

  private parseObject(): JsonValue {
    this.advance();
    const object: { [key: string]: JsonValue } = {};
    if (this.lexer.peek().kind === '}') {
      this.advance();
      return object;
    }
    for (;;) {
      const key = this.advance();
      if (key.kind !== 'string') throw this.unexpected(key, 'a string key');
      this.expect(':', "':' after an object key");
      // defineProperty: a key named `__proto__` is data, not the prototype.
      Object.defineProperty(object, key.text, { value: this.parseValue(), enumerable: true, writable: true, configurable: true });
      const token = this.advance();
      if (token.kind === '}') return object;
      if (token.kind !== ',') throw this.unexpected(token, "',' or '}'");
    }
  }

  private parseArray(): JsonValue {
    this.advance();
    const array: JsonValue[] = [];
    if (this.lexer.peek().kind === ']') {
      this.advance();
      return array;
    }
    for (;;) {
      array.push(this.parseValue());
      const token = this.advance();
      if (token.kind === ']') return array;
      if (token.kind !== ',') throw this.unexpected(token, "',' or ']'");
    }
  }

  // ---- tokens -----------------------------------------------------------------------------

  private advance(): Token {
    const token = this.lexer.next();
    this.lastEnd = token.end;
    return token;
  }

  private expect(kind: TokenKind, expected: string): Token {
    const token = this.advance();
    if (token.kind !== kind) throw this.unexpected(token, expected);
    return token;
  }

  private atWord(word: string): boolean {
    const token = this.lexer.peek();
    return token.kind === 'word' && token.text === word;
  }

  private unexpected(token: Token, expected: string) {
    return syntaxError(this.expression, token.start, `expected ${expected} but found ${describeToken(token)}`);
  }
}

function singularSteps(segments: readonly Segment[]): (string | number)[] | null {
  const steps: (string | number)[] = [];
  for (const segment of segments) {
    if (segment.kind !== 'child' || segment.selectors.length !== 1) return null;
    const selector = segment.selectors[0]!;
    if (selector.kind === 'name') steps.push(selector.name);
    else if (selector.kind === 'index') steps.push(selector.index);
    else return null;
  }
  return trimmed(steps);
}

/**
 * An exact-size copy. An array grown by `push` keeps room for about 16 more elements (~130
 * bytes), and a parsed expression is kept for as long as its subscription is indexed.
 */
function trimmed<T>(items: T[]): T[] {
  return items.slice();
}
