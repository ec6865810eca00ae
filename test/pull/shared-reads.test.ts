/**
 * Readers woken together share their database calls, in-process so that the reader's calls can
 * be counted by operation (the metric's hook) and its statements in flight seen: streams and
 * long polls of one subscription woken by a row cost one read and one acknowledgement, not one
 * each; a reader woken after a read began does not join it (it could miss the row that woke
 * it); and however many subscriptions wake at once, the readers' statements in flight stay
 * within their share of the database. On both databases.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { makeReadable } from '../../src/db/stores/pull.js';
import { READER_SHARE, pullReader } from '../../src/pull/reader.js';
import { sharedReads } from '../../src/pull/shared-reads.js';
import { PullWaiters } from '../../src/pull/waiters.js';
import { systemClock } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { EventStreamReader } from '../support/event-stream.js';
import { eventually } from '../support/http-stub.js';
import { matchRow } from '../support/match-row.js';
import { type PullApp, startPullApp } from '../support/pull-app.js';

const STREAMS = 100;
const POLLS = 100;
const ALICE = { 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `readers share their reads (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let pulls: PullApp;
    const waiters = new PullWaiters();

    before(async () => {
      test = await openTestDatabase(backend);
      pulls = await startPullApp(test.handle, waiters);
    });
    after(async () => {
      await pulls?.app.close();
      await test?.close();
    });

    it(`${STREAMS} streams and ${POLLS} long polls woken by one row cost one read and one acknowledgement`, async (t) => {
      const uuid = await pulls.subscribe('alice');
      const streams = await Promise.all(
        Array.from({ length: STREAMS }, () => EventStreamReader.open(`${pulls.url}/eventmatch/${uuid}/events/stream`, ALICE)),
      );
      try {
        const polls = Array.from({ length: POLLS }, () =>
          fetch(`${pulls.url}/eventmatch/${uuid}/events?wait=60`, { headers: ALICE }).then(
            async (response) => (await response.json()) as { events: Array<{ cursor: string }>; next: string },
          ),
        );
        await eventually(() => waiters.size === STREAMS + POLLS, `${STREAMS + POLLS} waiters`, 30_000);
        const before = pulls.calls().length;

        const cursor = await readableRow(test.handle, uuid);
        waiters.wake(uuid);

        const answers = await Promise.all(polls);
        for (const answer of answers)
          assert.deepEqual(
            answer.events.map((e) => e.cursor),
            [String(cursor)],
          );
        // A stream acknowledges what it wrote as soon as the write is out, before its client reads it.
        for (const stream of streams) assert.equal((await stream.nextEvent()).id, String(cursor));
        const calls = pulls.calls().slice(before);
        const reads = calls.filter((call) => call.operation === 'read' && call.cursor < cursor).length;
        const acknowledgements = calls.filter((call) => call.operation === 'acknowledge').length;
        t.diagnostic(`one row for ${STREAMS + POLLS} readers: ${reads} read, ${acknowledgements} acknowledgement`);
        assert.equal(reads, 1, 'the readers woken by the row read it together');
        assert.equal(acknowledgements, 1, 'the streams acknowledged it together');

        // A long poll acknowledging what the streams acknowledged writes nothing.
        const acknowledging = () => pulls.calls().filter((call) => call.operation === 'acknowledge').length;
        const acknowledged = acknowledging();
        const next = await fetch(`${pulls.url}/eventmatch/${uuid}/events?after=${cursor}`, { headers: ALICE });
        assert.equal(next.status, 200);
        assert.equal(acknowledging(), acknowledged);
        const states = await test.handle.db.selectFrom('matches').select('state').where('subscription_uuid', '=', uuid).execute();
        assert.deepEqual(
          states.map((row) => row.state),
          ['delivered'],
        );
        // The read found the end of the rows, and no wake came since: neither the streams nor the
        // next poll read after it.
        const readsAfter = (from: number) => pulls.calls().filter((call) => call.operation === 'read' && call.cursor === from).length;
        assert.deepEqual(((await next.json()) as { events: unknown[] }).events, []);
        assert.equal(readsAfter(cursor), 0, 'no read after the known end');
        // A wake forgets the end: the next row is read, by a poll and by every stream.
        const later = await readableRow(test.handle, uuid);
        waiters.wake(uuid);
        const poll = (await (await fetch(`${pulls.url}/eventmatch/${uuid}/events?after=${cursor}`, { headers: ALICE })).json()) as {
          events: Array<{ cursor: string }>;
        };
        assert.deepEqual(
          poll.events.map((e) => e.cursor),
          [String(later)],
        );
        for (const stream of streams) assert.equal((await stream.nextEvent()).id, String(later));
        assert.ok(readsAfter(cursor) >= 1 && readsAfter(cursor) <= 2, `${readsAfter(cursor)} reads after the first row`);
      } finally {
        for (const stream of streams) stream.close();
      }
      await eventually(() => waiters.size === 0, 'no waiter left');
    });

    it('a read begun before a wake, or a look-up begun before a write, is not joined by one after it', async () => {
      const reader = sharedReads(pullReader({ database: test.handle, clock: systemClock(), databaseTimeoutMs: 5_000 }), waiters);
      const uuid = await pulls.subscribe('alice');
      const looking = reader.subscription('alice', uuid);
      assert.equal(reader.subscription('alice', uuid), looking, 'the same owner and subscription, no write between: joined');
      const bobs = reader.subscription('bob', uuid);
      assert.notEqual(bobs, looking, 'another owner: a look-up of its own');
      await assert.rejects(bobs, (error: Error) => error.name === 'ServiceError' && /not found/.test(error.message));
      reader.subscriptionChanged({ kind: 'delete', uuid });
      const lookingAgain = reader.subscription('alice', uuid);
      assert.notEqual(lookingAgain, looking, 'written between: a look-up of its own, which may find it gone');

      const subscription = await looking;
      await lookingAgain;
      const first = reader.read(subscription, 0, 10);
      assert.equal(reader.read(subscription, 0, 10), first, 'a read of the same subscription and cursor, no wake between: joined');
      waiters.wake(uuid);
      const second = reader.read(subscription, 0, 10);
      assert.notEqual(second, first, 'woken between: a read of its own, which looks for the rows the wake announced');
      await Promise.all([first, second]);
    });

    it('remembers where the rows end only while every readable row is announced by a wake', async () => {
      const base = pullReader({ database: test.handle, clock: systemClock(), databaseTimeoutMs: 5_000 });
      let reads = 0;
      let announced = false;
      const reader = sharedReads(
        {
          ...base,
          read: (subscription, after, limit) => {
            reads++;
            return base.read(subscription, after, limit);
          },
        },
        waiters,
        () => announced,
      );
      const uuid = await pulls.subscribe('alice');
      const subscription = await reader.subscription('alice', uuid);
      await reader.read(subscription, 0, 10);
      await reader.read(subscription, 0, 10);
      assert.equal(reads, 2, 'not announced (a PostgreSQL listener down): every read asks');
      announced = true;
      await reader.read(subscription, 0, 10);
      assert.deepEqual(await reader.read(subscription, 0, 10), []);
      assert.equal(reads, 3, 'announced: the end found is remembered until a wake');
      const cursor = await readableRow(test.handle, uuid);
      waiters.wake(uuid);
      assert.deepEqual(
        (await reader.read(subscription, 0, 10)).map((event) => event.cursor),
        [String(cursor)],
      );
      assert.equal(reads, 4);
    });

    it(`readers of many subscriptions woken at once keep within their share (${READER_SHARE} statements at a time)`, async () => {
      const subscriptions = await Promise.all(Array.from({ length: 40 }, () => pulls.subscribe('alice')));
      const polls = subscriptions.map((uuid) =>
        fetch(`${pulls.url}/eventmatch/${uuid}/events?wait=60`, { headers: ALICE }).then((response) => response.json()),
      );
      await eventually(() => waiters.size === subscriptions.length, `${subscriptions.length} waiters`, 30_000);
      for (const uuid of subscriptions) await readableRow(test.handle, uuid);
      waiters.wakeAll();
      await Promise.all(polls);
      assert.ok(pulls.mostInFlight() <= READER_SHARE, `${pulls.mostInFlight()} reader statements in flight at once`);
    });
  });
}

/** A pending row of `subscription`, made readable: its cursor. */
async function readableRow(handle: DatabaseHandle, subscription: string): Promise<number> {
  const event = { uuid: randomUUID(), source: '/s', event_id: randomUUID(), type: 't', spec_version: '1.0', body: '{}', received: 1 };
  await handle.db.insertInto('events').values(event).execute();
  const row = matchRow({ uuid: randomUUID(), event_uuid: event.uuid, subscription_uuid: subscription, state: 'pending' });
  await handle.db.insertInto('matches').values(row).execute();
  await handle.db.transaction().execute((tx) => makeReadable(tx, handle.capabilities, [row.uuid]));
  const made = await handle.db.selectFrom('matches').select('cursor').where('uuid', '=', row.uuid).executeTakeFirstOrThrow();
  return Number(made.cursor);
}
