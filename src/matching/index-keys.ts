/**
 * Turns an expression's requirement into the keys the index files it under. A subscription is
 * a candidate for an event when ANY of its keys is found in the event, so the keys must form
 * one clause that the requirement implies: one conjunct of an `all`, or one key per branch of
 * an `any`. Among the clauses a requirement offers, the index picks the cheapest (see cost).
 */
import type { JsonValue } from '../json.js';
import type { PathStep, Requirement } from '../jsonpath/index.js';
import { holds } from '../jsonpath/requirement.js';

/**
 * What the node at the key's path must be for the key to be found in an event: the requirement
 * on one node the key was made from (its path included), kept as it is rather than copied.
 */
export type KeyTest = Extract<Requirement, { readonly path: readonly PathStep[] }>;

export interface IndexKey {
  readonly path: readonly PathStep[];
  readonly test: KeyTest;
  /** Identity of the key, for counting how many expressions mention it. */
  readonly id: string;
}

/** A disjunction of keys: the requirement holds only if one of them is found. */
export type Clause = readonly IndexKey[];

/** Cost of one key: lower is more selective. */
export type KeyCost = (key: IndexKey) => number;

/** Every clause the requirement implies, cheapest choices made inside `any` branches. */
export function clausesOf(requirement: Requirement, cost: KeyCost): Clause[] {
  switch (requirement.kind) {
    case 'always':
      return [];
    case 'exists':
    case 'equals':
    case 'compares':
    case 'endsWith':
    case 'members':
      return [[makeKey(requirement)]];
    case 'all':
      return requirement.of.flatMap((r) => clausesOf(r, cost));
    case 'any': {
      const union: IndexKey[] = [];
      for (const branch of requirement.of) {
        const best = cheapest(clausesOf(branch, cost), cost);
        if (!best) return [];
        union.push(...best);
      }
      return [dedupe(union)];
    }
  }
}

export function cheapest(clauses: readonly Clause[], cost: KeyCost): Clause | undefined {
  let best: Clause | undefined;
  let bestCost = Infinity;
  for (const clause of clauses) {
    const c = clauseCost(clause, cost);
    if (c < bestCost) {
      best = clause;
      bestCost = c;
    }
  }
  return best;
}

function clauseCost(clause: Clause, cost: KeyCost): number {
  let total = 0;
  for (const key of clause) total += cost(key);
  return total;
}

/**
 * Whether the requirement is what its clauses say, no less: one key, or all of several keys.
 * Then, when the requirement is exact, finding every clause's key in an event is the match.
 */
export function isConjunctionOfKeys(requirement: Requirement): boolean {
  return requirement.kind === 'all' ? requirement.of.every(isKey) : isKey(requirement);
}

const isKey = (requirement: Requirement) => requirement.kind !== 'always' && requirement.kind !== 'all' && requirement.kind !== 'any';

/** Whether `document` contains one of the clause's keys, checked directly: what finding one in the trie means. */
export function clauseHolds(clause: Clause, document: JsonValue): boolean {
  for (let i = 0; i < clause.length; i++) if (holds(clause[i]!.test, document)) return true;
  return false;
}

export function keysOf(clauses: readonly Clause[]): IndexKey[] {
  return dedupe(clauses.flat());
}

function makeKey(test: KeyTest): IndexKey {
  return { path: test.path, test, id: JSON.stringify(test.path.map(stepId)) + testId(test) };
}

function testId(test: KeyTest): string {
  switch (test.kind) {
    case 'exists':
      return '';
    case 'equals':
      return ` = ${typeof test.value}:${String(test.value)}`;
    case 'compares':
      return ` ${test.ordering} ${test.bound}`;
    case 'endsWith':
      return ` ends ${JSON.stringify(test.suffix)}`;
    case 'members':
      return ` members ${JSON.stringify(test.equal.map(({ name, value }) => [name, value]))}`;
  }
}

function stepId(s: PathStep): string | number {
  switch (s.kind) {
    case 'name':
      return `.${s.name}`;
    case 'index':
      return s.index;
    case 'any':
      return '*';
    case 'descend':
      return '..';
  }
}

function dedupe(keys: readonly IndexKey[]): IndexKey[] {
  const byId = new Map<string, IndexKey>();
  for (const key of keys) byId.set(key.id, key);
  return [...byId.values()];
}
