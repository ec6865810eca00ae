/**
 * The settler over a real database: which rows a claim must leave out while their outcomes are
 * on their way to it (held outcomes, refused by the database, are in held-outcomes.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { logEvent, pendingMatch } from '../../src/db/stores/events.js';
import { matchQueue } from '../../src/db/stores/match-queue.js';
import { claimDueMatches } from '../../src/db/stores/matches.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { Settler } from '../../src/runners/settler.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

const LEASE_US = 30_000_000;

for (const backend of testBackends()) {
  describeOn(backend, `settler (${backend.name})`, () => {
    it('names the rows of settlements not written yet whose leases have run out, and none once written', async (t) => {
      const test = await openTestDatabase(backend);
      t.after(() => test.close());
      const subscription = subscriptionRow();
      await insertSubscription(test.handle.db, test.handle.capabilities, subscription);
      const eventUuid = randomUUID();
      const match = { ...pendingMatch(eventUuid, subscription, 1), state: 'deliver' as const };
      await logEvent(
        test.handle.db,
        { uuid: eventUuid, source: '/s', event_id: 'e', type: 't', spec_version: '1.0', body: '{}', received: 1 },
        [match],
      );
      const [row] = await claimDueMatches(
        test.handle.db,
        test.handle.capabilities,
        'deliver',
        { holder: 'me', now: 10, durationUs: LEASE_US },
        1,
      );
      const leaseEnds = row!.locked_until!;
      const settler = new Settler(
        matchQueue(test.handle),
        'me',
        LEASE_US,
        () => 20,
        () => undefined,
      );

      const written = settler.settle(
        { changes: [{ uuid: row!.uuid, change: { state: 'delivered' } }], attempts: [], disable: [] },
        leaseEnds,
      );
      assert.deepEqual(settler.unwrittenPast(leaseEnds - 1), [], 'its lease still keeps claims away');
      assert.deepEqual(settler.unwrittenPast(leaseEnds), [row!.uuid]);
      assert.equal(settler.holding, false, 'on its way, not held');
      assert.deepEqual([...(await written).rows], [row!.uuid]);
      assert.deepEqual(settler.unwrittenPast(leaseEnds + 1), []);
      await settler.idle();
    });
  });
}
