/**
 * Work handed from one stage to the next in memory. A new event's match rows are written
 * already leased to this instance and handed to the policy stage, and the rows it allows are
 * handed on to the delivery stage the same way (their allowance written with their first
 * settlement there), so neither stage has to claim them or read their event back: on SQLite
 * that was two claims and two reads per event on the one connection. The rows are leased in
 * the database all along, so a crash loses nothing: the leases are released at start-up
 * (SQLite) or expire (PostgreSQL), and the claim path, which still serves retries and other
 * instances' work, takes them up.
 *
 * A handoff holds a bounded number of rows; when it is full, rows are written unleased and
 * claimed as before. From then on it takes no more until the stage has emptied it and then
 * claimed the queue dry (`overflowDrained`): rows keep their order (what waits in memory is
 * older than what overflowed, which is older than what comes after), and the overflowed rows
 * are not left in the queue for as long as new work keeps the handoff from emptying (a p99 of
 * seconds at 1,000 events/s). A row whose lease ran out while it waited is not handed out: the
 * claim path may have taken it.
 *
 * The taking stage may leave rows here that it would only give back to the queue (`stays`):
 * the delivery stage leaves those of an origin whose lane is full while the origin is answering
 * quickly. They keep their place, and the handoff fills with them, which holds back the stage
 * before, instead of each being written back to the queue and claimed again.
 */
import type { EventRow } from '../db/stores/events.js';
import type { MatchesTable } from '../db/tables.js';

/** Rows waiting in memory for each runner. */
export const HANDOFF_ROWS = 1_024;
/** The share of its lease a handed row must have left: time enough for a policy call or a delivery. */
export const HANDOFF_LEASE_LEFT = 0.5;

export interface HandedMatch {
  /**
   * As in the database, leased to this instance (locked_until set). Handed on by the policy
   * stage, it is still `policy` there, with its allowance (policy_code) in memory only: the
   * delivery stage writes it with the row's first settlement (runners/after-attempt.ts).
   */
  row: MatchesTable;
  event: EventRow;
}

export class Handoff {
  private items: HandedMatch[] = [];
  private reserved = 0;
  private overflowed = false;
  private readonly drainedListeners: Array<() => void> = [];

  /** `marginUs`: the lease time a row must have left to be handed out, enough to finish with it. */
  constructor(
    private readonly capacity: number,
    private readonly marginUs: number,
  ) {}

  /** Makes room for `count` rows about to be written leased; false when there is none. */
  reserve(count: number): boolean {
    if (this.overflowed || this.items.length + this.reserved + count > this.capacity) {
      this.overflowed = true;
      return false;
    }
    this.reserved += count;
    return true;
  }

  /** Rows waiting here. */
  get size(): number {
    return this.items.length;
  }

  /** Rows went to the queue instead of here, and the queue has not been claimed dry since. */
  get overflowing(): boolean {
    return this.overflowed;
  }

  /** A claim made with the handoff empty found less than it asked for: new rows may come here again. */
  overflowDrained(): void {
    if (!this.overflowed || this.size > 0) return;
    this.overflowed = false;
    for (const listener of this.drainedListeners) listener();
  }

  /** `listener` runs each time the handoff stops overflowing. */
  whenDrained(listener: () => void): void {
    this.drainedListeners.push(listener);
  }

  /** The reserved rows were not written after all (a failed write, a duplicate event). */
  release(count: number): void {
    this.reserved -= count;
  }

  /** The reserved rows are committed: they may be taken. */
  put(items: readonly HandedMatch[]): void {
    this.reserved -= items.length;
    this.items.push(...items);
  }

  /**
   * At most `limit` rows, oldest first. `stays` is asked of each row in turn until `limit` are
   * taken, and those it picks are left here, in their place.
   */
  take(limit: number, now: number, stays?: (item: HandedMatch) => boolean): HandedMatch[] {
    const usable = (item: HandedMatch) => item.row.locked_until !== null && item.row.locked_until - this.marginUs > now;
    if (stays === undefined) return this.items.splice(0, limit).filter(usable);
    const taken: HandedMatch[] = [];
    const left: HandedMatch[] = [];
    let next = 0;
    for (; next < this.items.length && taken.length < limit; next++) {
      const item = this.items[next]!;
      if (!usable(item)) continue;
      (stays(item) ? left : taken).push(item);
    }
    this.items.splice(0, next, ...left);
    return taken;
  }
}
