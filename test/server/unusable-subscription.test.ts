/**
 * A subscription stored under looser limits than today's (an older version, or a row written
 * by hand) must not keep the server from starting, nor stop the other subscriptions matching.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, testBackends } from '../support/database.js';
import { startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const HEADERS = { 'content-type': 'application/json', 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `a stored expression that no longer compiles (${backend.name})`, () => {
    it('is left out of matching with a warning naming it; the server starts and matches the rest', async () => {
      const database = await syncedDatabase(backend);
      const db = openDatabase(database.url);
      try {
        const env = { NOTIFICATIONS_DATABASE_URL: database.url };
        const first = await startServer(env);
        const create = async (name: string) => {
          const response = await fetch(`${first.url}/eventmatch`, {
            method: 'POST',
            headers: HEADERS,
            body: JSON.stringify({ name, jsonpath: "$[?$.source == '/stored']", target_url: 'http://127.0.0.1:9/' }),
          });
          assert.equal(response.status, 200);
          return ((await response.json()) as { uuid: string }).uuid;
        };
        const broken = await create('broken');
        await create('fine');
        assert.equal(await first.stop(), 0);
        await db.db
          .updateTable('subscriptions')
          .set({ jsonpath: `$[?$.source == '${'/'.repeat(3_000)}']` })
          .where('uuid', '=', broken)
          .execute();

        const second = await startServer(env);
        try {
          const received = await fetch(`${second.url}/receive`, {
            method: 'POST',
            headers: { 'content-type': 'application/cloudevents+json' },
            body: JSON.stringify({ specversion: '1.0', id: '1', source: '/stored', type: 't' }),
          });
          assert.equal(received.status, 200);
          assert.equal(((await received.json()) as { matches: number }).matches, 1);
          const warning = second
            .logs()
            .split('\n')
            .filter((line) => line.includes(broken))
            .map((line) => JSON.parse(line) as { level: number; msg: string });
          assert.equal(warning.length, 1, second.logs());
          assert.equal(warning[0]!.level, 40);
          assert.match(warning[0]!.msg, /left out of matching/);
        } finally {
          assert.equal(await second.stop(), 0);
        }
      } finally {
        await db.close();
        await database.cleanup();
      }
    });
  });
}
