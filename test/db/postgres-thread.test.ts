/**
 * The PostgreSQL thread (src/db/postgres-thread.ts): the operations run in a worker thread with
 * a pool of its own; their answers and errors (with PostgreSQL's SQLSTATE) come back, a
 * connection of its pool that fails while idle is reported where the handle was opened and
 * replaced, and closing ends the thread.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../src/db/connect.js';
import { pendingMatch } from '../../src/db/events.js';
import { syncSchema } from '../../src/db/migrate.js';
import { POSTGRES, POSTGRES_TEST_URL, describeOn, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { subscriptionRow } from '../support/subscription-row.js';

const SUBSCRIPTION = '00000000-0000-0000-0000-000000000001';
const EVENT = '00000000-0000-0000-0000-0000000000e1';

describeOn(POSTGRES, 'the PostgreSQL thread', () => {
  let database: TestDatabase;
  before(async () => {
    database = await POSTGRES.create();
    const handle = openDatabase(database.url);
    try {
      await syncSchema(handle);
    } finally {
      await handle.close();
    }
  });
  after(() => database.cleanup());

  it('answers operations with their results, and errors with PostgreSQL’s SQLSTATE', async () => {
    const handle = openDatabase(database.url);
    try {
      const row = subscriptionRow({ uuid: SUBSCRIPTION, name: 's', jsonpath: '$', owner: 'alice' });
      assert.deepEqual(await handle.perform('createSubscriptions', { rows: [row], most: 'off' }), [true]);
      await assert.rejects(handle.perform('createSubscriptions', { rows: [row], most: 'off' }), { code: '23505' });
      const event = {
        uuid: EVENT,
        source: '/thread',
        event_id: EVENT,
        type: 't',
        spec_version: '1.0',
        body: '{}',
        received: 1,
        traceparent: null,
      };
      const logged = await handle.perform('logEvents', [
        { event, matches: [pendingMatch(EVENT, { uuid: SUBSCRIPTION, owner: 'alice' }, 1)] },
      ]);
      assert.deepEqual(logged, [{ uuid: EVENT, matches: 1, duplicate: false }]);
      const claimed = await handle.perform('claim', { stage: 'policy', lease: { holder: 'h', now: 2, durationUs: 1_000_000 }, limit: 10 });
      assert.deepEqual(
        claimed.map((match) => [match.event_uuid, match.locked_by]),
        [[EVENT, 'h']],
      );
    } finally {
      await handle.close();
    }
  });

  it('reports a connection of its pool that failed while idle, and goes on with a new one', async () => {
    const applicationName = `postgres-thread test ${process.pid}`;
    const failures: Error[] = [];
    const handle = openDatabase(database.url, { applicationName, onConnectionError: (error) => failures.push(error) });
    const admin = new pg.Client({ connectionString: POSTGRES_TEST_URL });
    await admin.connect();
    try {
      // Only the thread has connected: the main thread's pool has made no statement.
      await handle.perform('claim', { stage: 'policy', lease: { holder: 'h', now: 2, durationUs: 1_000_000 }, limit: 1 });
      const { rowCount } = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [
        applicationName,
      ]);
      assert.ok(rowCount !== null && rowCount > 0, 'the thread held a connection');
      await eventually(() => failures.length > 0, 'the failure is reported');
      assert.equal((failures[0] as Error & { code?: string }).code, '57P01');
      assert.deepEqual(
        await handle.perform('claim', { stage: 'policy', lease: { holder: 'h', now: 3, durationUs: 1_000_000 }, limit: 1 }),
        [],
      );
    } finally {
      await admin.end();
      await handle.close();
    }
  });

  it('ends with the handle: an operation after closing is refused', async () => {
    const handle = openDatabase(database.url);
    await handle.close();
    await assert.rejects(handle.perform('claim', { stage: 'policy', lease: { holder: 'h', now: 2, durationUs: 1 }, limit: 1 }), {
      message: 'the database is closed',
    });
  });
});
