/**
 * One target's trouble stays its own, with the real server: a target answering after 5 s does
 * not delay another subscription's healthy target, and a target whose port resets every
 * connection is tried about once a second, not once per queued delivery.
 */
import assert from 'node:assert/strict';
import { type AddressInfo, createServer } from 'node:net';
import { it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

async function subscribe(server: RunningServer, source: string, targetUrl: string): Promise<void> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
    body: JSON.stringify({ name: targetUrl, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl }),
  });
  assert.equal(response.status, 200, await response.text());
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;

for (const backend of testBackends()) {
  describeOn(backend, `targets kept apart (${backend.name})`, () => {
    it("a target answering after 5 s does not delay another subscription's healthy target", async () => {
      const EVENTS = 150;
      const database = await syncedDatabase(backend);
      const slow = await startStub((_request, response) => void setTimeout(() => response.writeHead(204).end(), 5_000));
      const arrived = new Map<string, number>();
      const healthy = await startStub((request, response) => {
        arrived.set((JSON.parse(request.body) as { id: string }).id, performance.now());
        response.writeHead(204).end();
      });
      try {
        const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_LOG_LEVEL: 'warn' });
        try {
          await subscribe(server, '/both', `${slow.url}/slow`);
          await subscribe(server, '/both', `${healthy.url}/healthy`);
          const answered = new Map<string, number>();
          for (let i = 0; i < EVENTS; i++) {
            const id = `e${i}`;
            const response = await fetch(`${server.url}/receive`, {
              method: 'POST',
              headers: { 'content-type': 'application/cloudevents+json' },
              body: JSON.stringify({ specversion: '1.0', id, source: '/both', type: 't' }),
            });
            assert.equal(((await response.json()) as { matches: number }).matches, 2);
            answered.set(id, performance.now());
          }
          await eventually(() => arrived.size === EVENTS, 'the healthy target has every event', 20_000);
          const lags = [...answered].map(([id, at]) => arrived.get(id)! - at).sort((a, b) => a - b);
          const p90 = percentile(lags, 0.9);
          assert.ok(p90 < 1_000, `the healthy target's lag: p90 ${p90.toFixed(0)} ms, max ${lags.at(-1)!.toFixed(0)} ms`);
          assert.ok(slow.requests.length < EVENTS, 'the slow target was still working through its share');
        } finally {
          await server.stop('SIGKILL');
        }
      } finally {
        await slow.close();
        await healthy.close();
        await database.cleanup();
      }
    });

    it('a target whose port resets every connection gets about one connection a second, not one per queued delivery', async () => {
      const EVENTS = 1_000;
      const database = await syncedDatabase(backend);
      let connections = 0;
      const resetting = createServer((socket) => {
        connections++;
        socket.on('error', () => undefined);
        socket.resetAndDestroy();
      });
      await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
      const port = (resetting.address() as AddressInfo).port;
      try {
        const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_LOG_LEVEL: 'warn' });
        try {
          await subscribe(server, '/dead', `http://127.0.0.1:${port}/hook`);
          const batch = Array.from({ length: EVENTS }, (_, i) => ({ specversion: '1.0', id: `d${i}`, source: '/dead', type: 't' }));
          const response = await fetch(`${server.url}/receive`, {
            method: 'POST',
            headers: { 'content-type': 'application/cloudevents-batch+json' },
            body: JSON.stringify(batch),
          });
          assert.equal(response.status, 200);
          const started = performance.now();
          await new Promise((r) => setTimeout(r, 5_000));
          const seconds = (performance.now() - started) / 1000;
          // A first round of at most 16 (one per slot) finds it down; then one probe a second.
          assert.ok(connections >= 3, `${connections} connections: it was tried`);
          assert.ok(
            connections <= 16 + seconds + 3,
            `${connections} connections in ${seconds.toFixed(1)} s for ${EVENTS} queued deliveries`,
          );
          const metrics = await (await fetch(`${server.url}/metrics`)).text();
          assert.match(metrics, /^notifications_target_origins_down 1$/m, 'the operator sees it held back');
        } finally {
          await server.stop('SIGKILL');
        }
      } finally {
        await new Promise<void>((resolve) => resetting.close(() => resolve()));
        await database.cleanup();
      }
    });
  });
}
