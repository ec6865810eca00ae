/**
 * The event stream in-process, where its keep-alive can be shortened (a route option) and the
 * database's statements counted (a Kysely plugin on the reader's connection, as in
 * waiting.test.ts): comments come in every silence, past the request time-out; many idle
 * streams send no statement; each client that hangs up takes its waiter along; closing the
 * app ends every stream. On both databases.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { PullWaiters } from '../../src/pull/waiters.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { EventStreamReader } from '../support/event-stream.js';
import { eventually } from '../support/http-stub.js';
import { type PullApp, startPullApp } from '../support/pull-app.js';

const STREAMS = 200;
const KEEP_ALIVE_MS = 300;
/** Shorter than a stream lives in these tests: a stream is not a request still arriving. */
const REQUEST_TIMEOUT_MS = 1_000;
const ALICE = { 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `event streams in-process (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let pulls: PullApp;
    let uuid: string;
    const waiters = new PullWaiters();

    before(async () => {
      test = await openTestDatabase(backend);
      pulls = await startPullApp(test.handle, waiters, { requestTimeoutMs: REQUEST_TIMEOUT_MS, streamKeepAliveMs: KEEP_ALIVE_MS });
      uuid = await pulls.subscribe('alice');
    });
    after(async () => {
      await pulls?.app.close();
      await test?.close();
    });

    it('writes a keep-alive comment in each silence, and stays open past the request time-out', async () => {
      const stream = await EventStreamReader.open(`${pulls.url}/eventmatch/${uuid}/events/stream`, ALICE);
      try {
        assert.equal(stream.status, 200);
        assert.match(String(stream.response.headers['content-type']), /^text\/event-stream/);
        assert.equal((await stream.nextComment()).text, 'stream open');
        const started = Date.now();
        for (let i = 0; i < 4; i++) assert.equal((await stream.nextComment(KEEP_ALIVE_MS * 5)).text, 'keep-alive');
        const took = Date.now() - started;
        assert.ok(took >= KEEP_ALIVE_MS * 4 - 50, `four comments in ${took} ms: one per silence of ${KEEP_ALIVE_MS} ms, not more often`);
        // Past the request time-out and still open, with its waiter.
        await eventually(() => Date.now() - started > REQUEST_TIMEOUT_MS * 2, 'past the request time-out', 5_000);
        assert.equal(stream.ended, false);
        assert.equal((await stream.nextComment(KEEP_ALIVE_MS * 5)).text, 'keep-alive');
        assert.equal(waiters.size, 1);
      } finally {
        stream.close();
      }
      await eventually(() => waiters.size === 0, 'the waiter goes with its client');
    });

    it(`${STREAMS} idle streams send no statement, and each client that hangs up takes its waiter along`, async (t) => {
      const streams = await Promise.all(
        Array.from({ length: STREAMS }, () => EventStreamReader.open(`${pulls.url}/eventmatch/${uuid}/events/stream`, ALICE)),
      );
      try {
        await eventually(() => waiters.size === STREAMS, `${STREAMS} waiters`, 30_000);
        const before = pulls.statements();
        // A measurement over a window, several keep-alives long: what idle streams cost.
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        const idle = pulls.statements() - before;
        const comments = streams.reduce((sum, stream) => sum + stream.items.filter((item) => item.kind === 'comment').length, 0);
        t.diagnostic(
          `${STREAMS} streams: ${before} statements to open them (one subscription look-up and one read each), ${idle} in 2 s of ` +
            `waiting, during which they got ${comments - STREAMS} keep-alive comments (one per ${KEEP_ALIVE_MS} ms each)`,
        );
        assert.equal(idle, 0, 'no statement while they wait');
        assert.ok(comments - STREAMS >= STREAMS * 3, 'the keep-alives went on meanwhile');
        for (const stream of streams.slice(0, STREAMS / 2)) stream.close();
        await eventually(() => waiters.size === STREAMS / 2, 'the waiters of the clients that left are gone');
      } finally {
        for (const stream of streams) stream.close();
      }
      await eventually(() => waiters.size === 0, 'no waiter left');
    });
  });

  describeOn(backend, `event streams when the app closes (${backend.name})`, () => {
    it('closing the app ends its streams at once', async () => {
      const test = await openTestDatabase(backend);
      const waiters = new PullWaiters();
      const { app, url: base, subscribe } = await startPullApp(test.handle, waiters);
      try {
        const uuid = await subscribe('alice');
        const streams = await Promise.all(
          Array.from({ length: 5 }, () => EventStreamReader.open(`${base}/eventmatch/${uuid}/events/stream`, ALICE)),
        );
        await eventually(() => waiters.size === 5, 'five streams waiting');
        const started = Date.now();
        await app.close();
        const took = Date.now() - started;
        for (const stream of streams) await stream.end(1_000);
        assert.ok(took < 1_000, `closed in ${took} ms with five streams open`);
        assert.equal(waiters.size, 0);
      } finally {
        await app.close();
        await test.close();
      }
    });
  });
}
