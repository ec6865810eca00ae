/**
 * Pull rows in the database: cursors in commit order (a reader never skips a row that commits
 * later with a lower cursor), and retention expiring rows never read so that their events go.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { sql } from 'kysely';
import type { EventRow } from '../../src/db/stores/events.js';
import { makeReadable, readableAfter } from '../../src/db/stores/pull.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { startRetentionPurge } from '../../src/runners/retention.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { matchRow } from '../support/match-row.js';
import { subscriptionRow } from '../support/subscription-row.js';

const PULL = '00000000-0000-0000-0000-0000000000b1';
const PUSH = '00000000-0000-0000-0000-0000000000b2';

function event(received = 1): EventRow {
  return { uuid: randomUUID(), source: '/s', event_id: randomUUID(), type: 't', spec_version: '1.0', body: '{}', received };
}

for (const backend of testBackends()) {
  describeOn(backend, `pull rows (${backend.name})`, () => {
    async function withDatabase(body: (t: Awaited<ReturnType<typeof openTestDatabase>>) => Promise<void>): Promise<void> {
      const t = await openTestDatabase(backend);
      try {
        await insertSubscription(t.handle.db, t.handle.capabilities, subscriptionRow({ uuid: PULL, delivery: 'pull', target_url: '' }));
        await insertSubscription(t.handle.db, t.handle.capabilities, subscriptionRow({ uuid: PUSH }));
        await body(t);
      } finally {
        await t.close();
      }
    }

    // SQLite has one writer: its commit order is its write order.
    if (backend.name === 'postgres')
      it('gives cursors in commit order: a transaction taking cursors waits for the one before it to commit', async () => {
        await withDatabase(async ({ handle }) => {
          const logged = event();
          await handle.db.insertInto('events').values(logged).execute();
          const [first, second] = [randomUUID(), randomUUID()].map((uuid) =>
            matchRow({ uuid, event_uuid: logged.uuid, subscription_uuid: PULL, state: 'pending' }),
          );
          await handle.db.insertInto('matches').values([first!, second!]).execute();
          let releaseFirst = () => undefined as void;
          const held = new Promise<void>((resolve) => (releaseFirst = resolve));
          let firstTook = () => undefined as void;
          const firstHasCursor = new Promise<void>((resolve) => (firstTook = resolve));
          const one = handle.db.transaction().execute(async (tx) => {
            await makeReadable(tx, handle.capabilities, [first!.uuid]);
            firstTook();
            await held;
          });
          await firstHasCursor;
          const two = handle.db.transaction().execute((tx) => makeReadable(tx, handle.capabilities, [second!.uuid]));
          // The second waits on the counter's row lock while the first is open.
          await eventually(
            async () =>
              Number((await sql<{ n: string }>`select count(*) as n from pg_locks where not granted`.execute(handle.db)).rows[0]!.n) > 0,
            'the second transaction waits for a lock',
          );
          assert.deepEqual(await readableAfter(handle.db, PULL, 0, 10), [], 'nothing committed yet');
          releaseFirst();
          await Promise.all([one, two]);
          const read = await readableAfter(handle.db, PULL, 0, 10);
          assert.deepEqual(
            read.map((r) => r.uuid),
            [first!.uuid, second!.uuid],
          );
          assert.ok(read[0]!.cursor < read[1]!.cursor);
        });
      });

    it('retention expires pull rows never read, so their events are purged; an event another delivery waits for stays', async () => {
      await withDatabase(async ({ handle }) => {
        const alone = event();
        const shared = event();
        await handle.db.insertInto('events').values([alone, shared]).execute();
        const unread = matchRow({ event_uuid: alone.uuid, subscription_uuid: PULL, state: 'pending', cursor: 1, created: 1 });
        const unreadShared = matchRow({ event_uuid: shared.uuid, subscription_uuid: PULL, state: 'pending', cursor: 2, created: 1 });
        const pushing = matchRow({ event_uuid: shared.uuid, subscription_uuid: PUSH, state: 'deliver', created: 1 });
        await handle.db.insertInto('matches').values([unread, unreadShared, pushing]).execute();
        const now = 10_000_000_000;
        const purge = startRetentionPurge({
          database: handle,
          clock: () => now,
          retentionMs: 1_000,
          metrics: { eventsPurged: () => undefined },
          maxErrorPauseMs: 1_000,
          onError: (error) => assert.fail(String(error)),
        });
        try {
          const eventsLeft = async () => (await handle.db.selectFrom('events').select('uuid').execute()).map((e) => e.uuid);
          await eventually(async () => (await eventsLeft()).length === 1, 'the unread event purged');
          assert.deepEqual(await eventsLeft(), [shared.uuid]);
          const row = await handle.db.selectFrom('matches').select('state').where('uuid', '=', unreadShared.uuid).executeTakeFirstOrThrow();
          assert.equal(row.state, 'expired');
        } finally {
          await purge.stop();
        }
      });
    });
  });
}
