/**
 * A healthy but slow target given more deliveries at once than it has connections (16 per
 * origin): the rows wait for a connection before their attempt starts, so the time-out measures
 * the target's answer, not the queue.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const EVENTS = 100;
const ANSWER_MS = 1_000;

for (const backend of testBackends()) {
  describeOn(backend, `a slow target with more deliveries than connections (${backend.name})`, () => {
    it(`delivers ${EVENTS} events answered in ${ANSWER_MS} ms each, with a 3 s time-out, once each and without a time-out`, async () => {
      const database = await syncedDatabase(backend);
      let inFlight = 0;
      let mostInFlight = 0;
      const stub = await startStub((_request, response) => {
        mostInFlight = Math.max(mostInFlight, ++inFlight);
        setTimeout(() => {
          inFlight--;
          response.writeHead(204).end();
        }, ANSWER_MS);
      });
      const db = openDatabase(database.url);
      try {
        const server = await startServer({
          NOTIFICATIONS_DATABASE_URL: database.url,
          NOTIFICATIONS_TARGET_TIMEOUT: '3s',
          NOTIFICATIONS_LEASE: '20s',
          NOTIFICATIONS_RETRY_DELAYS: '100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms',
          NOTIFICATIONS_LOG_LEVEL: 'warn',
        });
        try {
          const created = await fetch(`${server.url}/eventmatch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
            body: JSON.stringify({ name: 'slow', jsonpath: "$[?$.source == '/busy']", target_url: `${stub.url}/hook` }),
          });
          assert.equal(created.status, 200);
          const batch = Array.from({ length: EVENTS }, (_, i) => ({
            specversion: '1.0',
            id: `busy-${i}`,
            source: '/busy',
            type: 'org.example',
          }));
          const received = await fetch(`${server.url}/receive`, {
            method: 'POST',
            headers: { 'content-type': 'application/cloudevents-batch+json' },
            body: JSON.stringify(batch),
          });
          assert.equal(received.status, 200);

          // 100 answers of 1 s over 16 connections: about 7 s.
          await eventually(
            async () => (await db.db.selectFrom('matches').select('state').where('state', '=', 'delivered').execute()).length === EVENTS,
            'every event delivered',
            20_000,
          );
          const attempts = await db.db.selectFrom('attempts').select(['status', 'error', 'duration_ms']).execute();
          assert.deepEqual(
            attempts.filter((a) => a.status !== 204),
            [],
            'no attempt but the answered ones',
          );
          assert.equal(attempts.length, EVENTS, 'one attempt each');
          // Each attempt measures the exchange, not the wait for a connection.
          for (const a of attempts)
            assert.ok(a.duration_ms >= ANSWER_MS - 50 && a.duration_ms < ANSWER_MS + 1_000, `an attempt took ${a.duration_ms} ms`);
          const ids = stub.requests.map((r) => (JSON.parse(r.body) as { id: string }).id);
          assert.equal(ids.length, EVENTS, 'each event sent once');
          assert.equal(new Set(ids).size, EVENTS);
          assert.ok(mostInFlight <= 16, `${mostInFlight} requests in flight at once, more than the 16 connections`);
        } finally {
          assert.equal(await server.stop(), 0);
        }
      } finally {
        await db.close();
        await stub.close();
        await database.cleanup();
      }
    });
  });
}
