/**
 * The deployment as the README describes it, on a database of its own with the default
 * `public` schema (every other test uses a `?schema=` of its own): create the database, run
 * the real `dbsync` and `dbchk`, start the real server, use it, drop the database.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import pg from 'pg';
import { describeOn, POSTGRES, POSTGRES_TEST_URL } from '../support/database.js';
import { eventually, reply, startStub } from '../support/http-stub.js';
import { runCli, startServer } from '../support/processes.js';

async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_TEST_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

describeOn(POSTGRES, 'a freshly created PostgreSQL database, default public schema', () => {
  it('dbsync, dbchk, then the server takes a subscription and delivers an event', async () => {
    const name = `notifications_fresh_${randomBytes(6).toString('hex')}`;
    const url = new URL(POSTGRES_TEST_URL!);
    url.pathname = `/${name}`;
    url.search = '';
    const databaseUrl = url.toString();
    const cli = (...args: string[]) => runCli(['--database-url', databaseUrl, ...args]);
    await onServer((client) => client.query(`create database "${name}"`));
    try {
      assert.equal((await cli('dbchk')).code, 255, 'an empty database must be synced');
      const sync = await cli('dbsync');
      assert.equal(sync.code, 0, sync.stderr);
      const check = await cli('dbchk');
      assert.equal(check.code, 0, check.stderr);
      assert.match(check.stdout, /is current/);

      const fresh = new pg.Client({ connectionString: databaseUrl });
      await fresh.connect();
      try {
        const { rows } = await fresh.query<{ table_schema: string; table_name: string }>(
          "select table_schema, table_name from information_schema.tables where table_name in ('kysely_migration', 'events', 'subscriptions')",
        );
        assert.deepEqual(rows.map((r) => `${r.table_schema}.${r.table_name}`).sort(), [
          'public.events',
          'public.kysely_migration',
          'public.subscriptions',
        ]);
      } finally {
        await fresh.end();
      }

      const target = await startStub(reply(204));
      try {
        const server = await startServer({ NOTIFICATIONS_DATABASE_URL: databaseUrl });
        try {
          const ready = await fetch(`${server.url}/readyz`);
          assert.equal(ready.status, 200);
          assert.deepEqual(await ready.json(), { status: 'ready', policy: 'allow-all', database: 'ok', schema: 'current' });
          const headers = { 'content-type': 'application/json', 'http-remote-user': 'alice' };
          const created = await fetch(`${server.url}/eventmatch`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ name: 'fresh', jsonpath: "$[?$.source == '/fresh']", target_url: target.url }),
          });
          assert.equal(created.status, 200, await created.clone().text());
          const record = (await created.json()) as { uuid: string };
          assert.equal((await fetch(`${server.url}/eventmatch/${record.uuid}`, { headers })).status, 200);
          const received = await fetch(`${server.url}/receive`, {
            method: 'POST',
            headers: { 'content-type': 'application/cloudevents+json' },
            body: JSON.stringify({ specversion: '1.0', id: 'fresh-1', source: '/fresh', type: 't' }),
          });
          assert.equal(received.status, 200);
          await eventually(() => target.requests.length === 1, 'the delivery');
        } finally {
          assert.equal(await server.stop(), 0);
        }
      } finally {
        await target.close();
      }
    } finally {
      await onServer((client) => client.query(`drop database if exists "${name}" with (force)`));
    }
  });
});
