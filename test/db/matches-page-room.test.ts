import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { logEvent } from '../../src/db/stores/events.js';
import { claimDueMatches } from '../../src/db/stores/matches.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { describeOn, openTestDatabase, POSTGRES } from '../support/database.js';
import { matchRow } from '../support/match-row.js';
import { subscriptionRow } from '../support/subscription-row.js';

/** More match rows than one page holds, so that the first page is as full as inserts make it. */
const ROWS = 100;

/**
 * Writes ROWS match rows in one insert, then claims the oldest (on the first page) and says
 * whether PostgreSQL wrote the claim as a heap-only update (no index entries), as the
 * statistics of the claim's own transaction count it.
 */
async function claimIsHeapOnly(handle: DatabaseHandle): Promise<boolean> {
  const subscription = subscriptionRow();
  await insertSubscription(handle.db, handle.capabilities, subscription);
  const eventUuid = randomUUID();
  const matches = Array.from({ length: ROWS }, (_, i) =>
    matchRow({ event_uuid: eventUuid, subscription_uuid: subscription.uuid, created: i + 1 }),
  );
  const event = { uuid: eventUuid, source: '/s', event_id: 'e', type: 't', spec_version: '1.0', body: '{}', received: 1 };
  await logEvent(handle.db, event, matches);
  return handle.db.transaction().execute(async (tx) => {
    const claimed = await claimDueMatches(tx, handle.capabilities, 'policy', { holder: 'h', now: 1_000, durationUs: 1_000 }, 1);
    assert.deepEqual(
      claimed.map((row) => row.uuid),
      [matches[0]!.uuid],
    );
    const { rows } = await sql<{
      updated: string;
      heap_only: string;
    }>`select n_tup_upd as updated, n_tup_hot_upd as heap_only from pg_stat_xact_user_tables where relid = 'matches'::regclass`.execute(tx);
    assert.equal(Number(rows[0]!.updated), 1);
    return Number(rows[0]!.heap_only) === 1;
  });
}

describeOn(POSTGRES, 'room on the pages of matches for the rows’ next versions (PostgreSQL)', () => {
  let database: Awaited<ReturnType<typeof openTestDatabase>>;
  before(async () => {
    database = await openTestDatabase(POSTGRES);
  });
  after(() => database.close());

  it('a claim of a row on a page filled by inserts writes no index entries', async () => {
    assert.equal(await claimIsHeapOnly(database.handle), true);
  });

  it('on pages packed full (as before 0009), the same claim writes index entries', async () => {
    const packed = await openTestDatabase(POSTGRES);
    try {
      await sql`alter table matches reset (fillfactor)`.execute(packed.handle.db);
      assert.equal(await claimIsHeapOnly(packed.handle), false);
    } finally {
      await packed.close();
    }
  });
});
