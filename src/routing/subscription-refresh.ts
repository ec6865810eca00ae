/**
 * With several instances on one database, each one's matcher must hear of subscriptions
 * written through the others. This polls for rows written recently. The window reaches back
 * further than one poll because `updated` comes from the writing instance's clock, which may
 * run behind ours; re-applying a row seen before costs a comparison (the matcher compiles
 * only what changed).
 */
import type { DatabaseHandle } from '../db/connect.js';
import { subscriptionsUpdatedSince } from '../db/subscriptions.js';
import type { LiveMatcher } from '../matching/live-matcher.js';
import type { Clock } from '../time/clock.js';

export interface SubscriptionRefreshDependencies {
  database: DatabaseHandle;
  matcher: LiveMatcher;
  clock: Clock;
  /** How far back each poll looks (µs): the poll interval plus the clock skew tolerated. */
  windowUs: number;
}

export function subscriptionRefreshStep(deps: SubscriptionRefreshDependencies): () => Promise<number> {
  return async () => {
    const rows = await subscriptionsUpdatedSince(deps.database.db, deps.clock() - deps.windowUs);
    for (const row of rows) deps.matcher.apply({ kind: 'upsert', row });
    return 0;
  };
}
