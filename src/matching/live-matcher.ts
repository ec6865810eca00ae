/**
 * The subscriptions that can match new events, compiled and indexed, kept in step with the
 * subscriptions table: loaded at start-up, then told of every write. Deleted and disabled
 * subscriptions are left out (re-enabling one puts it back).
 */
import type { MatchableRow } from '../db/subscriptions.js';
import type { JsonValue } from '../json.js';
import { compileJsonPath, type Dialect } from '../jsonpath/index.js';
import { SubscriptionIndex } from './subscription-index.js';

export interface MatchedSubscription {
  uuid: string;
  owner: string;
}

/** A subscription written (created, updated, deleted, disabled): what the matcher is told. */
export type MatcherChange = { kind: 'upsert'; row: MatchableRow } | { kind: 'delete'; uuid: string };

export interface LiveMatcherOptions {
  /** A stored expression that no longer compiles (written under other limits): left out. */
  onUnusable?: (uuid: string, error: unknown) => void;
  /** An expression threw while evaluated against an event (taken as no match): the subscriptions that share it. */
  onEvaluationError?: (uuids: ReadonlySet<string>, error: unknown) => void;
}

export class LiveMatcher {
  private readonly index: SubscriptionIndex<string>;
  private readonly owners = new Map<string, string>();
  /**
   * What each unusable subscription was written with, so that being told of the same row again
   * (a poll) says nothing new. (The index knows what the others were compiled from.)
   */
  private readonly unusable = new Map<string, { dialect: string; jsonpath: string }>();

  /** While a reload is under way: the subscriptions written meanwhile, which it must not forget. */
  private touched: Set<string> | undefined;

  constructor(private readonly options: LiveMatcherOptions = {}) {
    this.index = new SubscriptionIndex(options.onEvaluationError);
  }

  load(rows: readonly MatchableRow[]): void {
    for (const row of rows) this.apply({ kind: 'upsert', row });
  }

  /**
   * Brings the matcher in step with the live subscriptions `pages` reads, after changes may
   * have gone unheard: what they hold is applied, and what the matcher had that they lack is
   * forgotten, unless a change to it arrived while they were read (the read may be older than
   * that change). Returns the uuids forgotten.
   */
  async reload(pages: AsyncIterable<readonly MatchableRow[]>): Promise<string[]> {
    const before = [...this.owners.keys(), ...this.unusable.keys()];
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
    const gone = before.filter((uuid) => !seen.has(uuid) && !touched.has(uuid));
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
    // An unchanged expression is not compiled again.
    const known = this.unusable.get(row.uuid);
    if (this.index.holds(row.uuid, dialect, row.jsonpath) || (known?.dialect === dialect && known.jsonpath === row.jsonpath)) return;
    try {
      this.index.setExpression(row.uuid, dialect, row.jsonpath, () => compileJsonPath(row.jsonpath, dialect));
    } catch (error) {
      this.forget(row.uuid);
      this.unusable.set(row.uuid, { dialect, jsonpath: row.jsonpath });
      this.options.onUnusable?.(row.uuid, error);
      return;
    }
    this.owners.set(row.uuid, row.owner);
  }

  match(event: JsonValue): MatchedSubscription[] {
    return this.index.match(event).map((uuid) => ({ uuid, owner: this.owners.get(uuid)! }));
  }

  private forget(uuid: string): void {
    this.index.delete(uuid);
    this.owners.delete(uuid);
    this.unusable.delete(uuid);
  }
}
