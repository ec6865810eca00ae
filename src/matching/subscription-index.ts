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
import { type Clause, cheapest, clauseHolds, clausesOf, type IndexKey, isConjunctionOfKeys, keysOf } from './index-keys.js';
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

interface Entry<Match> {
  readonly dialect: Dialect;
  /** The expression text: subscriptions with the same one (and dialect) share the entry. */
  readonly source: string;
  /**
   * Only what matching needs of the compiled expression, and only when the index cannot answer
   * without evaluating it: an exact entry (below) is never evaluated, so it keeps no evaluator.
   * Keeping the whole compiled expression (its requirement, `select`, the rest of json-p3's
   * query) cost ~1 KB more per expression; keeping `matches` for exact ones, ~1.5 KB more (its
   * closures and their contexts): 230 MB of heap at 1,000,000 facility-shaped subscriptions.
   */
  readonly matches: CompiledJsonPath['matches'] | undefined;
  /**
   * What `match` answers for each subscription sharing the expression: an array, not a Set,
   * since copying them out is most of what matching costs at 1,000,000 subscriptions (~15,000
   * matched an event).
   */
  readonly found: Match[];
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
export type EvaluationErrorListener<Id> = (subscribers: readonly Id[], error: unknown) => void;

/** What `match` answers for a subscription: its id unless said otherwise when it was set. */
type Answer<Id, Match> = Id extends Match ? [match?: Match] : [match: Match];
/** The id of the subscription an answer is for: the answer itself unless said otherwise. */
type IdOfAnswer<Id, Match> = Match extends Id ? [idOf?: (match: Match) => Id] : [idOf: (match: Match) => Id];

/**
 * The index of subscriptions `Id`. `match` answers with each matched subscription's `Match`,
 * given when it was set (by default its id), from which `idOf` tells the id: the live matcher
 * answers with an object per subscription made once, not one per match.
 */
export class SubscriptionIndex<Id, Match = Id> {
  /** The entries of each dialect by expression text. */
  private readonly entries: Record<Dialect, Map<string, Entry<Match>>> = { rfc9535: new Map(), jsonpath2: new Map() };
  /**
   * Where each subscription is: a slot, and by slot its entry and its place in the entry's
   * `found` (parallel arrays rather than an object a subscription: 40 bytes less each).
   */
  private readonly slotOf = new Map<Id, number>();
  private readonly entryAt: (Entry<Match> | undefined)[] = [];
  private readonly positionAt: number[] = [];
  private readonly freeSlots: number[] = [];
  private readonly idOf: (match: Match) => Id;
  private readonly unindexed = new Set<Entry<Match>>();
  private readonly trie = new KeyTrie<Entry<Match>>();
  /**
   * Each distinct key once, shared by the entries that mention it (the project key of 30,000
   * subscriptions is one object, not 30,000), with how many expressions mention it in any of
   * their clauses: the key's cost.
   */
  private readonly keys = new Map<string, { key: IndexKey; mentions: number }>();
  private lookups = 0;
  private evaluations = 0;
  private failures = 0;

  constructor(
    private readonly onEvaluationError?: EvaluationErrorListener<Id>,
    ...[idOf]: IdOfAnswer<Id, Match>
  ) {
    // Without `idOf`, Match extends Id (IdOfAnswer's type says so): the answer is the id.
    this.idOf = idOf ?? ((match) => match as unknown as Id);
  }

  /** Adds or replaces the subscription `id`, answered by `match` (whose id is `id`). */
  set(id: Id, compiled: CompiledJsonPath, ...match: Answer<Id, Match>): void {
    this.setExpression(id, compiled.dialect, compiled.source, () => compiled, ...match);
  }

  /**
   * `set`, compiling only when no other subscription has the same expression: at 100,000
   * facility subscriptions about half share theirs with another, and compiling them anyway
   * doubled start-up time and its garbage.
   */
  setExpression(id: Id, dialect: Dialect, source: string, compile: () => CompiledJsonPath, ...match: Answer<Id, Match>): void {
    this.delete(id);
    this.addExpression(id, dialect, source, compile, ...match);
  }

  /**
   * `setExpression` for an `id` not indexed (`found` says undefined): one lookup of the id
   * fewer, at start-up a million of them.
   */
  addExpression(id: Id, dialect: Dialect, source: string, compile: () => CompiledJsonPath, ...match: Answer<Id, Match>): void {
    const entries = this.entries[dialect];
    let entry = entries.get(source);
    if (!entry) {
      entry = this.createEntry(compile());
      entries.set(source, entry);
    }
    const slot = this.freeSlots.pop() ?? this.entryAt.length;
    this.slotOf.set(id, slot);
    this.entryAt[slot] = entry;
    this.positionAt[slot] = entry.found.length;
    // Without `match`, Id extends Match (Answer's type says so): the id is the answer.
    entry.found.push(match.length > 0 ? match[0]! : (id as unknown as Match));
  }

  /** Whether `id` is indexed with this expression. */
  holds(id: Id, dialect: Dialect, source: string): boolean {
    const slot = this.slotOf.get(id);
    const entry = slot === undefined ? undefined : this.entryAt[slot];
    return entry !== undefined && entry.dialect === dialect && entry.source === source;
  }

  /** What `match` answers for `id`, while it is indexed. */
  found(id: Id): Match | undefined {
    const slot = this.slotOf.get(id);
    return slot === undefined ? undefined : this.entryAt[slot]!.found[this.positionAt[slot]!];
  }

  /** From now on answers `match` for `id` (indexed, its expression unchanged); its id stays `id`. */
  answerWith(id: Id, match: Match): void {
    const slot = this.slotOf.get(id)!;
    this.entryAt[slot]!.found[this.positionAt[slot]!] = match;
  }

  /** Every subscription indexed. */
  ids(): IterableIterator<Id> {
    return this.slotOf.keys();
  }

  delete(id: Id): boolean {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return false;
    const entry = this.entryAt[slot]!;
    const position = this.positionAt[slot]!;
    this.slotOf.delete(id);
    this.entryAt[slot] = undefined;
    this.freeSlots.push(slot);
    // The last subscriber takes the place of the one leaving.
    const last = entry.found.pop()!;
    if (position < entry.found.length) {
      entry.found[position] = last;
      this.positionAt[this.slotOf.get(this.idOf(last))!] = position;
    }
    if (entry.found.length === 0) this.dropEntry(entry);
    return true;
  }

  /** The subscriptions whose expression selects at least one node of `event`. */
  match(event: JsonValue): Match[] {
    return concatenated(this.matchGroups(event));
  }

  /**
   * `match`, in groups: the subscriptions of each expression matched. Each group is the index's
   * own array, to be read before the index next changes. At 1,000,000 facility subscriptions an
   * event matches ~15,000, and one array of them is a large object for V8 (over 128 KB), whose
   * allocation and collection cost ~90 µs an event, twice the rest of matching.
   */
  matchGroups(event: JsonValue): (readonly Match[])[] {
    const lookup = ++this.lookups;
    const candidates: Entry<Match>[] = [];
    this.trie.visit(event, (entry) => {
      if (entry.seenIn !== lookup) {
        entry.seenIn = lookup;
        candidates.push(entry);
      }
    });
    const groups: (readonly Match[])[] = [];
    for (const entry of candidates) {
      if (entry.matches === undefined ? this.otherClausesHold(entry, event) : this.evaluate(entry, entry.matches, event)) {
        groups.push(entry.found);
      }
    }
    for (const entry of this.unindexed) {
      if (this.evaluate(entry, entry.matches!, event)) groups.push(entry.found);
    }
    return groups;
  }

  stats(): IndexStats {
    return {
      subscriptions: this.slotOf.size,
      expressions: this.entries.rfc9535.size + this.entries.jsonpath2.size,
      unindexed: this.unindexed.size,
      lookups: this.lookups,
      evaluations: this.evaluations,
      failures: this.failures,
    };
  }

  /** For an exact entry the trie found through its placement: whether the keys of its other clauses are in the event too. */
  private otherClausesHold(entry: Entry<Match>, event: JsonValue): boolean {
    for (const clause of entry.clauses) {
      if (clause !== entry.placement && !clauseHolds(clause, event)) return false;
    }
    return true;
  }

  /** One subscription that cannot be evaluated must not fail the event for all the others. */
  private evaluate(entry: Entry<Match>, matches: CompiledJsonPath['matches'], event: JsonValue): boolean {
    this.evaluations++;
    try {
      return matches(event);
    } catch (error) {
      this.failures++;
      this.onEvaluationError?.(entry.found.map(this.idOf), error);
      return false;
    }
  }

  private createEntry(compiled: CompiledJsonPath): Entry<Match> {
    const clauses = clausesOf(compiled.requirement, this.keyCost).map((clause) => clause.map((key) => this.shared(key)));
    const popular: IndexKey[] = [];
    for (const key of keysOf(clauses)) {
      const mentions = ++this.keys.get(key.id)!.mentions;
      if (mentions >= POPULAR_KEY && (mentions & (mentions - 1)) === 0) popular.push(key);
    }
    // Exact: the expression matches when every clause's key is in the event. Found through the
    // trie, such an entry checks its other clauses' keys instead of being evaluated. (A
    // requirement that is a conjunction of keys has a clause; exact entries must be placed.)
    const exact = compiled.exact && isConjunctionOfKeys(compiled.requirement) && clauses.length > 0;
    const entry: Entry<Match> = {
      dialect: compiled.dialect,
      source: compiled.source,
      matches: exact ? undefined : compiled.matches,
      found: [],
      clauses,
      placement: undefined,
      seenIn: 0,
    };
    this.place(entry);
    for (const key of popular) this.reconsider(key);
    return entry;
  }

  private dropEntry(entry: Entry<Match>): void {
    this.entries[entry.dialect].delete(entry.source);
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

  private place(entry: Entry<Match>, clause = cheapest(entry.clauses, this.keyCost)): void {
    entry.placement = clause;
    if (!entry.placement) {
      this.unindexed.add(entry);
      return;
    }
    for (const key of entry.placement) this.trie.add(key, entry);
  }

  private unplace(entry: Entry<Match>): void {
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

/** The arrays' items in one array, allocated once at its size. */
function concatenated<T>(arrays: readonly (readonly T[])[]): T[] {
  let length = 0;
  for (const array of arrays) length += array.length;
  const out = new Array<T>(length);
  let at = 0;
  for (const array of arrays) for (let i = 0; i < array.length; i++) out[at++] = array[i]!;
  return out;
}
