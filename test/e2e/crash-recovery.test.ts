/**
 * kill -9 with 100 deliveries pending (some of them in flight): after a restart every one of
 * them is delivered (at least once).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { runCli, startServer } from '../support/processes.js';

const EVENTS = 100;

for (const backend of testBackends()) {
  describe(`crash recovery (${backend.name})`, () => {
    it(`delivers all ${EVENTS} pending deliveries after kill -9 and a restart`, async () => {
      const database = await backend.create();
      // The target holds every request without answering: deliveries stay in flight.
      const stub = await startStub(() => undefined);
      const env = {
        NOTIFICATIONS_DATABASE_URL: database.url,
        NOTIFICATIONS_TARGET_TIMEOUT: '10s',
        NOTIFICATIONS_LEASE: '11s',
        NOTIFICATIONS_RETRY_DELAYS: '200ms',
      };
      const db = openDatabase(database.url);
      try {
        assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
        const first = await startServer(env);
        const created = await fetch(`${first.url}/eventmatch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
          body: JSON.stringify({ name: 'all', jsonpath: "$[?$.source == '/crash']", target_url: stub.url }),
        });
        assert.equal(created.status, 200);
        const batch = Array.from({ length: EVENTS }, (_, i) => ({ specversion: '1.0', id: `crash-${i}`, source: '/crash', type: 'org.example' }));
        const received = await fetch(`${first.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents-batch+json' },
          body: JSON.stringify(batch),
        });
        assert.equal(received.status, 200);
        await eventually(() => stub.requests.length > 0, 'some deliveries are in flight');
        assert.equal(await first.stop('SIGKILL'), null);

        // Only what the restarted server gets answered counts: the first run's requests reached
        // the target too, but were never answered, so they delivered nothing.
        const delivered = new Set<string>();
        stub.answer((request, response) => {
          response.on('finish', () => delivered.add((JSON.parse(request.body) as { id: string }).id));
          response.writeHead(200).end();
        });
        const second = await startServer(env);
        try {
          await eventually(
            async () => {
              const rows = await db.db.selectFrom('matches').select('state').execute();
              return rows.length === EVENTS && rows.every((r) => r.state === 'delivered');
            },
            'every match delivered after the restart',
            // PostgreSQL waits for the dead instance's 11 s leases; SQLite must not (the restart
            // releases them at once), so its window is shorter than a lease.
            backend.name === 'postgres' ? 40_000 : 8_000,
          );
          assert.equal(delivered.size, EVENTS, 'each event was delivered by the restarted server');
        } finally {
          await second.stop();
        }
      } finally {
        await db.close();
        await stub.close();
        await database.cleanup();
      }
    });
  });
}
