/**
 * Finds the subscriptions whose expression matches an event without evaluating all of them.
 *
 * Each distinct expression is filed under the keys of one clause of its requirement (see
 * index-keys.ts); an event's walk through the key trie yields the candidates, and only those
 * are evaluated in full, except those whose requirement is exact (a single condition such as
 * `$.data[?@.mimetype == 'text/plain']`, or all of several), for which finding the key (and
 * checking the others' in the event) is the match. Expressions
 * with no usable requirement (`$`, a jsonpath2 filter on the root with `not`) have no key and
 * are evaluated for every event, exact or not. Subscriptions sharing the same expression share one evaluation.
 * The result is exactly what evaluating every subscription would give; the index only skips
 * expressions whose necessary condition the event does not meet.
 */

import type { JsonValue } from '../json.js';
import type { CompiledJsonPath, Dialect } from '../jsonpath/index.js';
import { type Clause, cheapest, clausesOf, type IndexKey, isConjunctionOfKeys, keyHolds, keysOf } from './index-keys.js';
import { KeyTrie } from './key-trie.js';

/**
 * What a key costs beyond the number of expressions filed under it: an `exists` key is found
 * in most events that have the member at all, a `compares` or `endsWith` key (a file
 * extension) in many, an `equals` or `members` key rarely.
 */
const KEY_PENALTY: Record<IndexKey['test']['kind'], number> = { members: 0, equals: 0, compares: 100, endsWith: 100, exists: 1_000 };
/**
 * When this many expressions (then twice as many, and so on) mention a key, the entries filed
 * under it are reconsidered: a key that was rare when they were placed may have become common.
 */
const POPULAR_KEY = 64;

interface Entry<Id> {
  /** Dialect and expression text: subscriptions with the same one share the entry. */
  readonly identity: string;
  /**
   * Only what matching needs of the compiled expression: keeping all of it (its requirement,
   * `select`, the rest of json-p3's query) cost ~1 KB more per expression, ~50 MB of heap at
   * 100,000 facility-shaped subscriptions.
   */
  readonly matches: CompiledJsonPath['matches'];
  /**
   * The expression matches exactly when every clause's key is in the event: found through the
   * trie, an entry checks its other clauses' keys instead of being evaluated.
   */
  readonly exact: boolean;
  readonly subscribers: Set<Id>;
  readonly clauses: Clause[];
  placement: Clause | undefined;
  /** The number of the last lookup that found this entry, so that it is evaluated once. */
  seenIn: number;
}

export interface IndexStats {
  subscriptions: number;
  expressions: number;
  /** Distinct expressions evaluated for every event. */
  unindexed: number;
  /** Events matched so far, and the full evaluations that took. */
  lookups: number;
  evaluations: number;
  /** Evaluations that threw (taken as no match): rare, while compile-time and document limits hold. */
  failures: number;
}

/** Told of each evaluation that threw: the subscriptions sharing the expression, and what it threw. */
export type EvaluationErrorListener<Id> = (subscribers: ReadonlySet<Id>, error: unknown) => void;

export class SubscriptionIndex<Id> {
  private readonly entries = new Map<string, Entry<Id>>();
  private readonly entryOf = new Map<Id, Entry<Id>>();
  private readonly unindexed = new Set<Entry<Id>>();
  private readonly trie = new KeyTrie<Entry<Id>>();
  /**
   * Each distinct key once, shared by the entries that mention it (the project key of 30,000
   * subscriptions is one object, not 30,000), with how many expressions mention it in any of
   * their clauses: the key's cost.
   */
  private readonly keys = new Map<string, { key: IndexKey; mentions: number }>();
  private lookups = 0;
  private evaluations = 0;
  private failures = 0;

  constructor(private readonly onEvaluationError?: EvaluationErrorListener<Id>) {}

  /** Adds or replaces the subscription `id`. */
  set(id: Id, compiled: CompiledJsonPath): void {
    this.setExpression(id, compiled.dialect, compiled.source, () => compiled);
  }

  /**
   * `set`, compiling only when no other subscription has the same expression: at 100,000
   * facility subscriptions about half share theirs with another, and compiling them anyway
   * doubled start-up time and its garbage.
   */
  setExpression(id: Id, dialect: Dialect, source: string, compile: () => CompiledJsonPath): void {
    this.delete(id);
    const identity = identityOf(dialect, source);
    let entry = this.entries.get(identity);
    if (!entry) {
      entry = this.createEntry(identity, compile());
      this.entries.set(identity, entry);
    }
    entry.subscribers.add(id);
    this.entryOf.set(id, entry);
  }

  /** Whether `id` is indexed with this expression. */
  holds(id: Id, dialect: Dialect, source: string): boolean {
    return this.entryOf.get(id)?.identity === identityOf(dialect, source);
  }

  delete(id: Id): boolean {
    const entry = this.entryOf.get(id);
    if (!entry) return false;
    this.entryOf.delete(id);
    entry.subscribers.delete(id);
    if (entry.subscribers.size === 0) this.dropEntry(entry);
    return true;
  }

  /** The subscriptions whose expression selects at least one node of `event`. */
  match(event: JsonValue): Id[] {
    const lookup = ++this.lookups;
    const candidates: Entry<Id>[] = [];
    this.trie.visit(event, (entry) => {
      if (entry.seenIn !== lookup) {
        entry.seenIn = lookup;
        candidates.push(entry);
      }
    });
    const matched: Id[] = [];
    for (const entry of candidates) {
      if (entry.exact ? this.otherClausesHold(entry, event) : this.evaluate(entry, event)) {
        for (const id of entry.subscribers) matched.push(id);
      }
    }
    for (const entry of this.unindexed) {
      if (this.evaluate(entry, event)) for (const id of entry.subscribers) matched.push(id);
    }
    return matched;
  }

  stats(): IndexStats {
    return {
      subscriptions: this.entryOf.size,
      expressions: this.entries.size,
      unindexed: this.unindexed.size,
      lookups: this.lookups,
      evaluations: this.evaluations,
      failures: this.failures,
    };
  }

  /** For an exact entry the trie found through its placement: whether the keys of its other clauses are in the event too. */
  private otherClausesHold(entry: Entry<Id>, event: JsonValue): boolean {
    for (const clause of entry.clauses) {
      if (clause !== entry.placement && !clause.some((key) => keyHolds(key, event))) return false;
    }
    return true;
  }

  /** One subscription that cannot be evaluated must not fail the event for all the others. */
  private evaluate(entry: Entry<Id>, event: JsonValue): boolean {
    this.evaluations++;
    try {
      return entry.matches(event);
    } catch (error) {
      this.failures++;
      this.onEvaluationError?.(entry.subscribers, error);
      return false;
    }
  }

  private createEntry(identity: string, compiled: CompiledJsonPath): Entry<Id> {
    const clauses = clausesOf(compiled.requirement, this.keyCost).map((clause) => clause.map((key) => this.shared(key)));
    const popular: IndexKey[] = [];
    for (const key of keysOf(clauses)) {
      const mentions = ++this.keys.get(key.id)!.mentions;
      if (mentions >= POPULAR_KEY && (mentions & (mentions - 1)) === 0) popular.push(key);
    }
    const entry: Entry<Id> = {
      identity,
      matches: compiled.matches,
      exact: compiled.exact && isConjunctionOfKeys(compiled.requirement),
      subscribers: new Set(),
      clauses,
      placement: undefined,
      seenIn: 0,
    };
    this.place(entry);
    for (const key of popular) this.reconsider(key);
    return entry;
  }

  private dropEntry(entry: Entry<Id>): void {
    this.entries.delete(entry.identity);
    this.unplace(entry);
    for (const key of keysOf(entry.clauses)) {
      const known = this.keys.get(key.id)!;
      if (--known.mentions === 0) this.keys.delete(key.id);
    }
  }

  /** The key object already known for `key`'s id, or `key` itself, from now on known. */
  private shared(key: IndexKey): IndexKey {
    const known = this.keys.get(key.id);
    if (known) return known.key;
    this.keys.set(key.id, { key, mentions: 0 });
    return key;
  }

  private place(entry: Entry<Id>, clause = cheapest(entry.clauses, this.keyCost)): void {
    entry.placement = clause;
    if (!entry.placement) {
      this.unindexed.add(entry);
      return;
    }
    for (const key of entry.placement) this.trie.add(key, entry);
  }

  private unplace(entry: Entry<Id>): void {
    if (entry.placement) for (const key of entry.placement) this.trie.remove(key, entry);
    else this.unindexed.delete(entry);
    entry.placement = undefined;
  }

  /** Moves the entries filed under a key that became popular to cheaper clauses. */
  private reconsider(key: IndexKey): void {
    for (const entry of this.trie.itemsAt(key)) {
      const best = cheapest(entry.clauses, this.keyCost);
      if (best && best !== entry.placement) {
        this.unplace(entry);
        this.place(entry, best);
      }
    }
  }

  private readonly keyCost = (key: IndexKey): number => (this.keys.get(key.id)?.mentions ?? 0) + KEY_PENALTY[key.test.kind];
}

const identityOf = (dialect: Dialect, source: string) => `${dialect}\u0000${source}`;
