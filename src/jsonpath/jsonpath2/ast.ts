/**
 * The tree of a Pacifica jsonpath2 expression, as the parser builds it and the evaluator and
 * the requirement derivation read it.
 */
import type { JsonValue } from '../../json.js';
import type { FunctionName } from './functions.js';

/** `$…` (from the document root) or `@…` (from the node under test). */
export interface PathExpression {
  readonly origin: 'root' | 'current';
  readonly segments: readonly Segment[];
  /**
   * For a path of names and indices only (`@.size`, `$.data[0].name`), which selects at most
   * one node: its steps, read directly instead of walked. Null for any other path.
   */
  readonly singular: readonly (string | number)[] | null;
}

/**
 * `child`: `.name`, `.*`, `.fn()`, `[…]` — the selectors applied to the node.
 * `descendant`: `..name`, `..*`, `..[…]` — the selectors applied to the node and, depth first,
 * to every node below it.
 */
export interface Segment {
  readonly kind: 'child' | 'descendant';
  /** Several when the brackets hold a union `[a,b]`; results come selector by selector. */
  readonly selectors: readonly Selector[];
}

export type Selector =
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number }
  | { readonly kind: 'slice'; readonly start: number | null; readonly end: number | null; readonly step: number | null }
  | { readonly kind: 'wildcard' }
  /** `?(…)`: keeps the node itself when the expression holds for it. */
  | { readonly kind: 'filter'; readonly expression: FilterExpression }
  /** `[@.key]`, `[$.x]`: each value the path selects is used as a member name or an index. */
  | { readonly kind: 'nested'; readonly path: PathExpression }
  | FunctionCall;

export interface FunctionCall {
  readonly kind: 'call';
  readonly name: FunctionName;
  readonly args: readonly Operand[];
  /** `substring(1,2)`: how the call appears in the path of its result (arguments as written). */
  readonly text: string;
}

/** One side of a comparison, a test or a function argument. */
export type Operand = { readonly kind: 'path'; readonly path: PathExpression } | { readonly kind: 'value'; readonly value: JsonValue };

export type ComparisonOperator = '=' | '!=' | '<' | '<=' | '>' | '>=' | 'contains';

export type FilterExpression =
  | { readonly kind: 'and'; readonly operands: readonly FilterExpression[] }
  | { readonly kind: 'or'; readonly operands: readonly FilterExpression[] }
  | { readonly kind: 'not'; readonly operand: FilterExpression }
  | {
      readonly kind: 'comparison';
      readonly operator: ComparisonOperator;
      readonly left: Operand;
      readonly right: Operand;
    }
  /** A bare operand: a path selects at least one node; a value is truthy. */
  | { readonly kind: 'test'; readonly operand: Operand };
