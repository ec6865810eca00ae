/**
 * While the listener is down, the fallback poll finds rows other instances made readable and
 * wakes the waiters that have not read them; while it listens, it leaves waiters to the
 * notifications. On every database (the server starts it only on PostgreSQL, where instances
 * share the rows).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { latestCursors, makeReadable } from '../../src/db/stores/pull.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { startFallbackPoll } from '../../src/pull/fallback-poll.js';
import { PullWaiters } from '../../src/pull/waiters.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { matchRow } from '../support/match-row.js';
import { subscriptionRow } from '../support/subscription-row.js';

const PULL = '00000000-0000-0000-0000-0000000000c1';
const POLL_MS = 20;

for (const backend of testBackends()) {
  describeOn(backend, `the pull fallback poll (${backend.name})`, () => {
    it('wakes a waiter for a row made readable elsewhere only while not listening, and not for rows it has read', async () => {
      const t = await openTestDatabase(backend);
      const waiters = new PullWaiters();
      let listening = true;
      let polls = 0;
      const poll = startFallbackPoll({
        db: t.handle.db,
        waiters,
        listening: () => {
          polls++;
          return listening;
        },
        onError: (error) => assert.fail(String(error)),
        pollMs: POLL_MS,
      });
      try {
        await insertSubscription(t.handle.db, t.handle.capabilities, subscriptionRow({ uuid: PULL, delivery: 'pull', target_url: '' }));
        const readable = async () => {
          const event = {
            uuid: randomUUID(),
            source: '/s',
            event_id: randomUUID(),
            type: 't',
            spec_version: '1.0',
            body: '{}',
            received: 1,
          };
          await t.handle.db.insertInto('events').values(event).execute();
          const row = matchRow({ uuid: randomUUID(), event_uuid: event.uuid, subscription_uuid: PULL, state: 'pending' });
          await t.handle.db.insertInto('matches').values(row).execute();
          await t.handle.db.transaction().execute((tx) => makeReadable(tx, t.handle.capabilities, [row.uuid]));
        };
        await readable();

        // Listening: the notification would wake it; the poll asks nothing and wakes nothing.
        const heard = waiters.wait(PULL, 0, 10_000);
        const pollsBefore = polls;
        await until(() => polls >= pollsBefore + 5);
        assert.equal(waiters.size, 1, 'still waiting while notifications flow');

        // Not listening: the next poll finds the readable row after the waiter's cursor.
        listening = false;
        assert.equal(await heard.ended, 'woken');

        // A waiter that has read up to the latest cursor is left waiting, until a row comes after it.
        const latest = (await latestCursors(t.handle.db, [PULL])).get(PULL)!;
        const caughtUp = waiters.wait(PULL, latest, 10_000);
        const pollsThen = polls;
        await until(() => polls >= pollsThen + 5);
        assert.equal(waiters.size, 1, 'nothing after its cursor: still waiting');
        await readable();
        assert.equal(await caughtUp.ended, 'woken');
      } finally {
        poll.stop();
        waiters.close();
        await t.close();
      }
    });
  });
}

/** Waits until `condition` holds; fails past a bound far beyond the few polls it waits for. */
async function until(condition: () => boolean, boundMs = 10_000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    assert.ok(Date.now() - started < boundMs, 'the poll did not run');
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
