/**
 * SIGTERM with work in flight and more waiting in memory (runners/handoff.ts): the deliveries
 * in flight finish, the rows still waiting go back to the queue at once (not when their lease
 * runs out), and the next instance delivers the rest, each match exactly once. A delivery still
 * held by its target when the grace is over goes back too, and the exit is still 0.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, reply, startStub } from '../support/http-stub.js';
import { startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const EVENTS = 1_500;

/** A subscription of alice's, made through `server`, sending what `jsonpath` matches to `target`. */
async function subscribe(server: string, target: string, jsonpath: string): Promise<void> {
  const created = await fetch(`${server}/eventmatch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
    body: JSON.stringify({ name: 'all', jsonpath, target_url: target }),
  });
  assert.equal(created.status, 200, await created.text());
}

for (const backend of testBackends()) {
  describeOn(backend, `graceful shutdown (${backend.name})`, () => {
    it('finishes the deliveries in flight and releases the leases of the rows waiting in memory', async (t) => {
      const database = await syncedDatabase(backend);
      // The target holds every request until told: deliveries stay in flight, the rest queue up.
      const held: ServerResponse[] = [];
      const stub = await startStub((_request, response) => void held.push(response));
      const env = {
        NOTIFICATIONS_DATABASE_URL: database.url,
        NOTIFICATIONS_TARGET_TIMEOUT: '30s',
        // Far longer than the test may wait: only a release lets the next instance take the rows.
        NOTIFICATIONS_LEASE: '120s',
        NOTIFICATIONS_LOG_LEVEL: 'warn',
      };
      const db = openDatabase(database.url);
      try {
        const first = await startServer(env);
        await subscribe(first.url, stub.url, "$[?$.source == '/shutdown']");
        const batch = Array.from({ length: EVENTS }, (_, i) => ({
          specversion: '1.0',
          id: `shutdown-${i}`,
          source: '/shutdown',
          type: 'org.example',
        }));
        const received = await fetch(`${first.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents-batch+json' },
          body: JSON.stringify(batch),
        });
        assert.equal(received.status, 200, await received.text());
        await eventually(() => held.length > 0, 'some deliveries are in flight');

        const leasedBefore = await db.db.selectFrom('matches').select('uuid').where('locked_by', 'is not', null).execute();
        const exit = first.stop('SIGTERM');
        // Let the deliveries in flight finish, as the target would.
        stub.answer(reply(204));
        for (const response of held.splice(0)) response.writeHead(204).end();
        assert.equal(await exit, 0, `the server exits cleanly:\n${first.logs()}`);

        const rows = await db.db.selectFrom('matches').select(['uuid', 'state', 'locked_by']).execute();
        assert.equal(rows.length, EVENTS);
        assert.deepEqual(
          rows.filter((r) => r.locked_by !== null),
          [],
          'no row is left leased',
        );
        const waiting = new Set(rows.filter((r) => r.state !== 'delivered').map((r) => r.uuid));
        const released = leasedBefore.filter((r) => waiting.has(r.uuid));
        assert.ok(
          released.length > 0,
          `some rows were leased but not delivered at SIGTERM (${leasedBefore.length} leased, ${waiting.size} waiting at exit)`,
        );

        const second = await startServer(env);
        const secondStarted = performance.now();
        try {
          await eventually(
            async () => (await db.db.selectFrom('matches').select('state').where('state', '!=', 'delivered').execute()).length === 0,
            'every match delivered by the next instance, long before the old leases would run out',
            30_000,
          );
          t.diagnostic(
            `the next instance delivered the ${waiting.size} rows left in ${((performance.now() - secondStarted) / 1000).toFixed(1)} s`,
          );
        } finally {
          assert.equal(await second.stop(), 0);
        }
        const deliveries = new Map<string, number>();
        for (const request of stub.requests) {
          const { id } = JSON.parse(request.body) as { id: string };
          deliveries.set(id, (deliveries.get(id) ?? 0) + 1);
        }
        assert.equal(deliveries.size, EVENTS, 'each event reached the target');
        assert.deepEqual(
          [...deliveries].filter(([, n]) => n > 1),
          [],
          'none twice',
        );
      } finally {
        await db.close();
        await stub.close();
        await database.cleanup();
      }
    });

    it('exits 0 at the end of its grace when a target holds a delivery, and gives that delivery back to the queue', async () => {
      const database = await syncedDatabase(backend);
      const held: ServerResponse[] = [];
      const stub = await startStub((_request, response) => void held.push(response));
      const env = {
        NOTIFICATIONS_DATABASE_URL: database.url,
        NOTIFICATIONS_TARGET_TIMEOUT: '60s',
        NOTIFICATIONS_LEASE: '120s',
        NOTIFICATIONS_SHUTDOWN_GRACE: '1s',
        NOTIFICATIONS_LOG_LEVEL: 'warn',
      };
      const db = openDatabase(database.url);
      try {
        const server = await startServer(env);
        await subscribe(server.url, stub.url, '$');
        const received = await fetch(`${server.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json' },
          body: JSON.stringify({ specversion: '1.0', id: 'held-1', source: '/shutdown', type: 'org.example' }),
        });
        assert.equal(received.status, 200, await received.text());
        await eventually(() => held.length === 1, 'the delivery is in flight at the target');

        // The target never answers within the test: only the grace can end the shutdown.
        assert.equal(await server.stop('SIGTERM'), 0, `exit 0 past the grace:\n${server.logs()}`);
        assert.match(server.logs(), /longer than its grace of 1000 ms/);
        const rows = await db.db.selectFrom('matches').select(['state', 'locked_by']).execute();
        // Its allowance was to be written with the delivery's outcome: the policy is asked again first.
        assert.deepEqual(rows, [{ state: 'policy', locked_by: null }], 'the row is back in the queue, not leased for 120 s');
        for (const response of held.splice(0)) response.destroy();
      } finally {
        await db.close();
        await stub.close();
        await database.cleanup();
      }
    });
  });
}
