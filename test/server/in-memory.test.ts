/**
 * `sqlite::memory:`: no other process can reach the server's in-memory database, so no dbsync
 * can prepare it; the server creates the schema itself, for such a database only (a file or a
 * PostgreSQL schema that was never synced is refused: server-process.test.ts,
 * test/cli/missing-database.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventually, reply, startStub } from '../support/http-stub.js';
import { runCli, startServer } from '../support/processes.js';

describe('svc-notifications on sqlite::memory:', () => {
  it('creates its schema, takes a subscription and delivers an event', async () => {
    const target = await startStub(reply(204));
    const server = await startServer({ NOTIFICATIONS_DATABASE_URL: 'sqlite::memory:' }).catch(async (error: unknown) => {
      await target.close();
      throw error;
    });
    try {
      const ready = await fetch(`${server.url}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready', policy: 'allow-all', database: 'ok', schema: 'current' });
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
        body: JSON.stringify({ name: 'memory', jsonpath: "$[?$.source == '/in-memory']", target_url: target.url }),
      });
      assert.equal(created.status, 200, await created.clone().text());
      const received = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id: 'm-1', source: '/in-memory', type: 't' }),
      });
      assert.equal(received.status, 200);
      assert.equal(((await received.json()) as { matches: number }).matches, 1);
      await eventually(() => target.requests.length === 1, 'the delivery');
      assert.equal((JSON.parse(target.requests[0]!.body) as { id: string }).id, 'm-1');
    } finally {
      assert.equal(await server.stop(), 0);
      await target.close();
    }
  });
});

describe('svc-notifications-cmd on sqlite::memory:', () => {
  it("refuses it: exit 2 and one line, since it cannot reach a server's in-memory database", async () => {
    for (const command of ['dbsync', 'dbchk', 'eventget']) {
      const result = await runCli(['--database-url', 'sqlite::memory:', command]);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.match(result.stderr, /sqlite::memory: .*in-memory database/);
    }
  });
});
