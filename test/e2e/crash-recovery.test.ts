/**
 * kill -9 with 100 deliveries pending (some of them in flight): after a restart every one of
 * them is delivered (at least once). And kill -9 right after /receive answered: what it
 * answered for is in the log.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const EVENTS = 100;
/** /receive answers collected before the kill, from this many senders at once. */
const ANSWERS = 300;
const SENDERS = 32;

for (const backend of testBackends()) {
  describeOn(backend, `crash recovery (${backend.name})`, () => {
    it(`delivers all ${EVENTS} pending deliveries after kill -9 and a restart`, async () => {
      const database = await syncedDatabase(backend);
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
        const first = await startServer(env);
        const created = await fetch(`${first.url}/eventmatch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
          body: JSON.stringify({ name: 'all', jsonpath: "$[?$.source == '/crash']", target_url: stub.url }),
        });
        assert.equal(created.status, 200);
        const batch = Array.from({ length: EVENTS }, (_, i) => ({
          specversion: '1.0',
          id: `crash-${i}`,
          source: '/crash',
          type: 'org.example',
        }));
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

    it('answers /receive only after the commit: every event answered 200 is logged with its matches after kill -9', async () => {
      const database = await syncedDatabase(backend);
      const stub = await startStub();
      const db = openDatabase(database.url);
      try {
        const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_LOG_LEVEL: 'warn' });
        for (const name of ['one', 'two']) {
          const created = await fetch(`${server.url}/eventmatch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
            body: JSON.stringify({ name, jsonpath: "$[?$.source == '/durable']", target_url: stub.url }),
          });
          assert.equal(created.status, 200);
        }
        const answered: Array<{ uuid: string; matches: number }> = [];
        let next = 0;
        let killed = false;
        // Senders keep /receive busy, so that commits follow each other back to back; the server
        // is killed the moment the ANSWERS-th answer is in, whatever it is committing then.
        const sender = async () => {
          while (!killed) {
            const id = `durable-${next++}`;
            let answer: { uuid: string; matches: number };
            try {
              const response = await fetch(`${server.url}/receive`, {
                method: 'POST',
                headers: { 'content-type': 'application/cloudevents+json' },
                body: JSON.stringify({ specversion: '1.0', id, source: '/durable', type: 'org.example' }),
              });
              assert.equal(response.status, 200);
              answer = (await response.json()) as { uuid: string; matches: number };
            } catch (error) {
              if (killed) return; // the request was cut off by the kill: never answered
              throw error;
            }
            // Also an answer read after the kill was sent before it.
            answered.push(answer);
            if (answered.length >= ANSWERS && !killed) {
              killed = true;
              server.process.kill('SIGKILL');
            }
          }
        };
        await Promise.all(Array.from({ length: SENDERS }, sender));
        assert.equal(await server.stop(), null, 'killed');

        assert.ok(answered.length >= ANSWERS);
        assert.ok(answered.every((a) => a.matches === 2));
        const uuids = answered.map((a) => a.uuid);
        const events = await db.db.selectFrom('events').select('uuid').where('uuid', 'in', uuids).execute();
        assert.equal(events.length, answered.length, 'every event answered 200 is in the log');
        const matches = await db.db
          .selectFrom('matches')
          .select((eb) => ['event_uuid', eb.fn.countAll<number>().as('n')])
          .where('event_uuid', 'in', uuids)
          .groupBy('event_uuid')
          .execute();
        assert.equal(matches.length, answered.length, 'every answered event has its matches');
        assert.ok(
          matches.every((m) => Number(m.n) === 2),
          'both of them',
        );
      } finally {
        await db.close();
        await stub.close();
        await database.cleanup();
      }
    });
  });
}
