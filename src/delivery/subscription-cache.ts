/**
 * The subscriptions the delivery runner has read, kept so that each batch of claimed rows reads
 * only those it has not: under load the same few hundred subscriptions come back in every batch,
 * and reading their whole rows again was the SQLite thread's second-largest cost.
 *
 * A row kept is as fresh as the rows waiting in the runner's lanes: both hear of every write
 * through the same feed (the API's writes, the runner's own disabling, and on a shared database
 * the other instances' writes by notification and poll). A read that was under way when a change
 * came keeps nothing, so an older read never overwrites a newer change.
 */
import type { SubscriptionChange } from '../db/stores/subscriptions.js';
import type { SubscriptionRow } from '../db/tables.js';
import { RecentlyUsed } from '../recently-used.js';

export type ReadSubscriptions = (uuids: readonly string[]) => Promise<Map<string, SubscriptionRow>>;

export class SubscriptionCache {
  /** Set again on each use, so the one forgotten when full is the one used longest ago. */
  private readonly rows: RecentlyUsed<string, SubscriptionRow>;
  /** Counts the changes heard: a read that saw it move may be older than one of them. */
  private changes = 0;

  constructor(
    private readonly read: ReadSubscriptions,
    limit: number,
  ) {
    this.rows = new RecentlyUsed(limit);
  }

  /** The rows of these subscriptions (those that exist), reading only those not kept. */
  async get(uuids: readonly string[]): Promise<Map<string, SubscriptionRow>> {
    const found = new Map<string, SubscriptionRow>();
    const missing: string[] = [];
    for (const uuid of new Set(uuids)) {
      const row = this.rows.get(uuid);
      if (row === undefined) {
        missing.push(uuid);
        continue;
      }
      this.rows.set(uuid, row);
      found.set(uuid, row);
    }
    if (missing.length === 0) return found;
    const changesBefore = this.changes;
    const read = await this.read(missing);
    const keep = this.changes === changesBefore;
    for (const [uuid, row] of read) {
      found.set(uuid, row);
      if (keep) this.rows.set(uuid, row);
    }
    return found;
  }

  /** A subscription was written: the row kept is replaced (or forgotten when deleted). */
  changed(change: SubscriptionChange): void {
    this.changes += 1;
    if (change.kind === 'delete') this.rows.delete(change.uuid);
    else if (this.rows.has(change.row.uuid)) this.rows.set(change.row.uuid, change.row);
  }
}
