/**
 * A catastrophic-backtracking pattern does not hold the server: try-it, create and /receive
 * with `(a+)+b` against a subject of 20,000 `a`s and `!` are answered promptly, and /healthz,
 * polled all along, always answers at once. With a backtracking engine the first such request
 * held the main thread (and so every other request) for longer than anyone waits.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { type HttpStub, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const HOSTILE = `${'a'.repeat(20_000)}!`;
/** Hang detectors with a wide margin: each answer takes milliseconds. */
const PROMPT_MS = 2_000;
const HEALTH_MS = 1_000;
const USER = { 'http-remote-user': 'mallory' };

/**
 * Runs `requests` while polling /healthz, 10 ms apart; then every poll must have been answered
 * within HEALTH_MS.
 */
async function whilePollingHealth(server: RunningServer, requests: () => Promise<void>): Promise<void> {
  const took: number[] = [];
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const start = performance.now();
      try {
        const response = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
        took.push(response.ok ? performance.now() - start : Infinity);
      } catch {
        took.push(Infinity);
      }
      await sleep(10);
    }
  })();
  try {
    await requests();
  } finally {
    polling = false;
    await poller;
  }
  assert.ok(took.length >= 1, 'polled /healthz');
  const slowest = Math.max(...took);
  assert.ok(slowest < HEALTH_MS, `/healthz took up to ${slowest.toFixed(0)} ms over ${took.length} polls`);
}

/** `request`'s answer and how long it took; a request unanswered after 30 s fails. */
async function timed(url: string, init: RequestInit): Promise<{ status: number; body: unknown; ms: number }> {
  const start = performance.now();
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const body: unknown = await response.json();
  return { status: response.status, body, ms: performance.now() - start };
}

for (const backend of testBackends()) {
  describeOn(backend, `a catastrophic pattern does not hold the server (${backend.name})`, () => {
    let database: TestDatabase;
    let server: RunningServer;
    let target: HttpStub;

    before(async () => {
      database = await syncedDatabase(backend);
      target = await startStub();
      server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_LOG_LEVEL: 'warn' });
    });
    after(async () => {
      // a server held by its main thread would not see SIGTERM
      const killer = setTimeout(() => void server?.stop('SIGKILL'), 10_000);
      await server?.stop();
      clearTimeout(killer);
      await target?.close();
      await database?.cleanup();
    });

    it('POST /eventmatch/test answers match() and search() with (a+)+b promptly', () =>
      whilePollingHealth(server, async () => {
        const tries: Array<[string, boolean]> = [
          ["$[?match(@, '(a+)+b')]", false],
          ["$[?search(@, '(a|a)*b')]", false],
          ["$[?match(@, '(a+)+!')]", true],
        ];
        for (const [jsonpath, matches] of tries) {
          const answer = await timed(`${server.url}/eventmatch/test`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...USER },
            body: JSON.stringify({ jsonpath, event: { x: HOSTILE } }),
          });
          assert.equal(answer.status, 200, JSON.stringify(answer.body));
          assert.equal((answer.body as { matches: boolean }).matches, matches, jsonpath);
          assert.ok(answer.ms < PROMPT_MS, `${jsonpath} answered in ${answer.ms.toFixed(0)} ms`);
        }
      }));

    it('a stored (a+)+b subscription and an event with a hostile subject: create and /receive answer promptly', () =>
      whilePollingHealth(server, async () => {
        const subscriptions: Array<[string, string]> = [
          ['hostile', "$[?match($.subject, '(a+)+b')]"],
          ['matching', "$[?search($.subject, '(a|a)*!')]"],
        ];
        for (const [name, jsonpath] of subscriptions) {
          const created = await timed(`${server.url}/eventmatch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...USER },
            body: JSON.stringify({ name, jsonpath, target_url: `${target.url}/hook` }),
          });
          assert.equal(created.status, 200, JSON.stringify(created.body));
          assert.ok(created.ms < PROMPT_MS, `create answered in ${created.ms.toFixed(0)} ms`);
        }
        const event = {
          specversion: '1.0',
          id: 'hostile-1',
          source: '/e2e/hostile-pattern',
          type: 'org.example.hostile',
          subject: HOSTILE,
        };
        const received = await timed(`${server.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json' },
          body: JSON.stringify(event),
        });
        assert.equal(received.status, 200, JSON.stringify(received.body));
        assert.equal((received.body as { matches: number }).matches, 1, 'the matching subscription only');
        assert.ok(received.ms < PROMPT_MS, `/receive answered in ${received.ms.toFixed(0)} ms`);
      }));
  });
}
