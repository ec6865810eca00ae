import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { SUBSCRIPTION_ROWS_PER_STATEMENT } from '../../src/db/stores/subscriptions.js';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { runCli, startServer } from '../support/processes.js';
import { subscriptionRow } from '../support/subscription-row.js';

/** More than two of the start-up load's pages (5,000 rows), so that pages are read ahead. */
const SUBSCRIPTIONS = 12_001;
/** Expressions shared by many subscriptions, as the facility's are; all of them match the event below. */
const KEYS = 40;

for (const backend of testBackends()) {
  describeOn(backend, `start-up with stored subscriptions (${backend.name})`, () => {
    let database: TestDatabase;
    before(async () => {
      database = await backend.create();
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      const handle = openDatabase(database.url);
      try {
        for (let start = 0; start < SUBSCRIPTIONS; start += SUBSCRIPTION_ROWS_PER_STATEMENT) {
          const rows = Array.from({ length: Math.min(SUBSCRIPTION_ROWS_PER_STATEMENT, SUBSCRIPTIONS - start) }, (_, i) =>
            subscriptionRow({ owner: `user-${(start + i) % 7}`, jsonpath: `$.data.k${(start + i) % KEYS}` }),
          );
          await handle.db.insertInto('subscriptions').values(rows).execute();
        }
      } finally {
        await handle.close();
      }
    });
    after(() => database.cleanup());

    it('says ready only with every stored subscription loaded: the first event after matches them all', async () => {
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url }, { timeoutMs: 60_000 });
      const handle = openDatabase(database.url);
      try {
        const ready = await fetch(`${server.url}/readyz`);
        assert.equal(ready.status, 200);
        assert.equal(((await ready.json()) as { status: string }).status, 'ready');
        const data = Object.fromEntries(Array.from({ length: KEYS }, (_, k) => [`k${k}`, k]));
        const received = await fetch(`${server.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json' },
          body: JSON.stringify({ specversion: '1.0', id: 'first', source: '/start-up', type: 'org.example', data }),
        });
        assert.equal(received.status, 200);
        const matched = async () => Number((await sql<{ n: number }>`select count(*) as n from matches`.execute(handle.db)).rows[0]!.n);
        await eventually(async () => (await matched()) > 0, 'the event matched');
        assert.equal(await matched(), SUBSCRIPTIONS);
      } finally {
        await handle.close();
        assert.equal(await server.stop(), 0);
      }
    });
  });
}
