/**
 * The subscriptions that can match new events, compiled and indexed, kept in step with the
 * subscriptions table: loaded at start-up, then told of every write. Deleted and disabled
 * subscriptions are left out (re-enabling one puts it back).
 *
 * Every instance holds every live subscription, so what each one costs here bounds how many an
 * instance can hold: besides its share of its expression's entry in the index, a subscription
 * is its uuid, its place in the index, and the object `match` answers with, made once and
 * shared by every match; its owner's name is one string for all of the owner's subscriptions.
 * Whether it takes the service's notices is one more member of that object (a pointer's width),
 * not a set of its own.
 */
import type { MatchableRow } from '../db/stores/subscriptions.js';
import type { JsonValue } from '../json.js';
import { compileJsonPath, type Dialect } from '../jsonpath/index.js';
import { compactCopy } from './compact-string.js';
import { SubscriptionIndex } from './subscription-index.js';

export interface MatchedSubscription {
  readonly uuid: string;
  readonly owner: string;
  /** Whether the service's notices about the owner's other subscriptions may match it (receive/operational-events.ts). */
  readonly notices: boolean;
}

/** A subscription written (created, updated, deleted, disabled): what the matcher is told. */
export type MatcherChange = { kind: 'upsert'; row: MatchableRow } | { kind: 'delete'; uuid: string };

export interface LiveMatcherOptions {
  /** A stored expression that no longer compiles (written under other limits): left out. */
  onUnusable?: (uuid: string, error: unknown) => void;
  /** An expression threw while evaluated against an event (taken as no match): the subscriptions that share it. */
  onEvaluationError?: (uuids: readonly string[], error: unknown) => void;
}

export class LiveMatcher {
  private readonly index: SubscriptionIndex<string, MatchedSubscription>;
  /** Each owner's name once, with how many of the subscriptions indexed are theirs. */
  private readonly owners = new Map<string, { readonly name: string; subscriptions: number }>();
  /**
   * What each unusable subscription was written with, so that being told of the same row again
   * (a poll) says nothing new. (The index knows what the others were compiled from.)
   */
  private readonly unusable = new Map<string, { dialect: string; jsonpath: string }>();

  /** While a reload is under way: the subscriptions written meanwhile, which it must not forget. */
  private touched: Set<string> | undefined;

  constructor(private readonly options: LiveMatcherOptions = {}) {
    this.index = new SubscriptionIndex<string, MatchedSubscription>(options.onEvaluationError, (match) => match.uuid);
  }

  /**
   * The live rows of a first read of the table (start-up), each of a subscription the matcher
   * does not hold: indexed without asking what it holds (a million lookups of a uuid fewer), and
   * without copying their strings, which come flat from the read.
   */
  load(rows: readonly MatchableRow[]): void {
    for (const row of rows) {
      if (row.deleted === null && row.disabled === null) this.add(row, row.uuid);
    }
  }

  /**
   * Brings the matcher in step with the live subscriptions `pages` reads, after changes may
   * have gone unheard: what they hold is applied, and what the matcher had that they lack is
   * forgotten, unless a change to it arrived while they were read (the read may be older than
   * that change). Returns the uuids forgotten.
   */
  async reload(pages: AsyncIterable<readonly MatchableRow[]>): Promise<string[]> {
    const seen = new Set<string>();
    const touched = (this.touched = new Set());
    try {
      for await (const page of pages) {
        for (const row of page) {
          seen.add(row.uuid);
          this.apply({ kind: 'upsert', row });
        }
      }
    } finally {
      this.touched = undefined;
    }
    const gone: string[] = [];
    for (const uuids of [this.index.ids(), this.unusable.keys()]) {
      for (const uuid of uuids) if (!seen.has(uuid) && !touched.has(uuid)) gone.push(uuid);
    }
    for (const uuid of gone) this.forget(uuid);
    return gone;
  }

  apply(change: MatcherChange): void {
    this.touched?.add(change.kind === 'delete' ? change.uuid : change.row.uuid);
    if (change.kind === 'delete' || change.row.deleted !== null || change.row.disabled !== null) {
      this.forget(change.kind === 'delete' ? change.uuid : change.row.uuid);
      return;
    }
    const { row } = change;
    // The stored dialect, not today's configured order: a subscription keeps its meaning.
    const dialect = row.dialect as Dialect;
    const notices = row.notices !== 0;
    // An unchanged expression is not compiled again; a change of `notices` alone changes the answer only.
    const known = this.unusable.get(row.uuid);
    if (known?.dialect === dialect && known.jsonpath === row.jsonpath) return;
    // One lookup of the uuid for a subscription not held yet (every one at start-up).
    const held = this.index.found(row.uuid);
    if (held !== undefined && this.index.holds(row.uuid, dialect, row.jsonpath)) {
      if (held.notices !== notices) this.index.answerWith(row.uuid, { uuid: held.uuid, owner: held.owner, notices });
      return;
    }
    if (held !== undefined || known !== undefined) this.forget(row.uuid);
    // Kept for as long as the subscription lives: a uuid made here (randomUUID) is a rope of
    // ~14 pieces, ~490 bytes against ~60 for a copy in one piece.
    this.add(row, compactCopy(row.uuid));
  }

  /** Indexes the live subscription `row`, held under `uuid`, which the matcher does not hold. */
  private add(row: MatchableRow, uuid: string): void {
    // The stored dialect, not today's configured order: a subscription keeps its meaning.
    const dialect = row.dialect as Dialect;
    const owner = this.ownerName(row.owner);
    try {
      this.index.addExpression(uuid, dialect, row.jsonpath, () => compileJsonPath(row.jsonpath, dialect), {
        uuid,
        owner,
        notices: row.notices !== 0,
      });
    } catch (error) {
      this.releaseOwner(owner);
      this.unusable.set(uuid, { dialect, jsonpath: row.jsonpath });
      this.options.onUnusable?.(uuid, error);
    }
  }

  /** The subscriptions matched, as objects shared by every match: not to be changed. */
  match(event: JsonValue): MatchedSubscription[] {
    return this.index.match(event);
  }

  /** The one copy of `owner`'s name, counted once more. */
  private ownerName(owner: string): string {
    let known = this.owners.get(owner);
    if (!known) {
      const name = compactCopy(owner);
      this.owners.set(name, (known = { name, subscriptions: 0 }));
    }
    known.subscriptions++;
    return known.name;
  }

  private releaseOwner(name: string): void {
    const known = this.owners.get(name)!;
    if (--known.subscriptions === 0) this.owners.delete(name);
  }

  private forget(uuid: string): void {
    const owner = this.index.found(uuid)?.owner;
    if (owner !== undefined) this.releaseOwner(owner);
    this.index.delete(uuid);
    this.unusable.delete(uuid);
  }
}
