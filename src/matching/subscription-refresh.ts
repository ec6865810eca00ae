/**
 * With several instances on one database, each one's matcher must hear of subscriptions
 * written through the others: by uuid when a notification names them, and by polling for rows
 * written recently. A poll reaches back to the start of the previous successful one, and a
 * window further, because `updated` comes from the writing instance's clock, which may run
 * behind ours; re-applying a row seen before costs a comparison (the matcher compiles only what
 * changed).
 *
 * Reads and applies run one at a time: a read that starts later sees every write committed
 * before it started, so a row applied is never overwritten by an older read of it.
 */
import type { DatabaseHandle } from '../db/connect.js';
import {
  liveSubscriptionPages,
  type SubscriptionChange,
  subscriptionsByUuid,
  subscriptionsUpdatedSince,
} from '../db/stores/subscriptions.js';
import type { Clock } from '../time/clock.js';
import type { ExpectedNotifications } from '../db/expected-notifications.js';
import type { LiveMatcher } from './live-matcher.js';

export interface SubscriptionRefreshDependencies {
  database: DatabaseHandle;
  /** Loaded from the table just before this is created; what `reload` brings in step. */
  matcher: LiveMatcher;
  /** Where each change read goes: the matcher, and whoever else keeps copies of subscriptions. */
  apply: (change: SubscriptionChange) => void;
  clock: Clock;
  /** How much further back than the previous poll each poll looks (µs): the clock skew tolerated. */
  windowUs: number;
  /**
   * What the first poll reaches back to (µs, before the window): when the matcher's load began,
   * since it read the table as it was then. By default, when this is created.
   */
  since?: number;
  /** A fetch for notified rows failed (the poll will find them). */
  onError: (error: unknown) => void;
  /** This instance's creates, applied already: their notifications are not read back. */
  expected?: ExpectedNotifications;
}

export interface SubscriptionRefresh {
  /** Applies every row written since the previous successful poll (and the window before it). */
  poll(): Promise<number>;
  /** A notification named this subscription: it is fetched and applied soon, with the others. */
  notified(uuid: string): void;
  /** Reads every live subscription, after notifications may have been missed; resolves with the number forgotten. */
  reload(): Promise<number>;
  /** Resolves when the reads under way or queued have finished. */
  settled(): Promise<void>;
}

/** Notified rows fetched per query. */
const FETCH_BATCH = 500;

export function subscriptionRefresh(deps: SubscriptionRefreshDependencies): SubscriptionRefresh {
  let coveredFrom = deps.since ?? deps.clock();
  let tail: Promise<unknown> = Promise.resolve();
  const pending = new Set<string>();
  let fetchQueued = false;

  function serially<T>(work: () => Promise<T>): Promise<T> {
    const result = tail.then(work);
    tail = result.catch(() => undefined);
    return result;
  }

  async function fetchNotified(): Promise<void> {
    fetchQueued = false;
    const uuids = [...pending].slice(0, FETCH_BATCH);
    for (const uuid of uuids) pending.delete(uuid);
    if (pending.size > 0) queueFetch();
    const rows = await subscriptionsByUuid(deps.database.db, uuids);
    for (const row of rows.values()) deps.apply({ kind: 'upsert', row });
  }

  function queueFetch(): void {
    if (fetchQueued) return;
    fetchQueued = true;
    serially(fetchNotified).catch(deps.onError);
  }

  return {
    poll: () =>
      serially(async () => {
        const startedAt = deps.clock();
        const rows = await subscriptionsUpdatedSince(deps.database.db, coveredFrom - deps.windowUs);
        for (const row of rows) deps.apply({ kind: 'upsert', row });
        coveredFrom = startedAt;
        return 0;
      }),
    reload: () =>
      serially(async () => {
        const gone = await deps.matcher.reload(liveSubscriptionPages(deps.database.db));
        for (const uuid of gone) deps.apply({ kind: 'delete', uuid });
        return gone.length;
      }),
    notified: (uuid) => {
      if (deps.expected?.take(uuid)) return;
      pending.add(uuid);
      // Notifications that arrive while a read is under way wait for it, and share the next one.
      queueFetch();
    },
    settled: async () => {
      await tail;
    },
  };
}
