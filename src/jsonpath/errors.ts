import type { Dialect } from './types.js';

const EXCERPT_CHARS = 12;

/**
 * An expression that no dialect accepts. `position` is the 0-based offset into the expression
 * where parsing stopped; the message is written to be shown to a user as is (in a 400 answer).
 */
export class JsonPathSyntaxError extends Error {
  override readonly name = 'JsonPathSyntaxError';

  constructor(
    readonly expression: string,
    readonly position: number,
    readonly detail: string,
    readonly dialect: Dialect,
  ) {
    super(`invalid JSONPath at position ${position}: ${detail} (${describePosition(expression, position)})`);
  }
}

function describePosition(expression: string, position: number): string {
  if (position >= expression.length) return 'at the end of the expression';
  const from = Math.max(0, position - EXCERPT_CHARS);
  const before = (from > 0 ? '…' : '') + expression.slice(from, position);
  const after = expression.slice(position, position + EXCERPT_CHARS) + (position + EXCERPT_CHARS < expression.length ? '…' : '');
  return `near "${before}▸${after}"`;
}
