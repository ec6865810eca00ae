/**
 * The event stream in-process, where its keep-alive can be shortened (a route option) and the
 * database's statements counted (a Kysely plugin on the reader's connection, as in
 * waiting.test.ts): comments come in every silence, past the request time-out; many idle
 * streams send no statement; each client that hangs up takes its waiter along; closing the
 * app ends every stream. On both databases.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { KyselyPlugin } from 'kysely';
import { buildApp } from '../../src/api/app.js';
import { eventmatchRoutes } from '../../src/api/eventmatch-routes.js';
import { eventsRoutes } from '../../src/api/events-routes.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { pullReader } from '../../src/pull/reader.js';
import { PullWaiters } from '../../src/pull/waiters.js';
import { systemClock } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { EventStreamReader } from '../support/event-stream.js';
import { eventually } from '../support/http-stub.js';
import { defaultTargetGuard } from '../support/target-guard.js';

const STREAMS = 200;
const KEEP_ALIVE_MS = 300;
/** Shorter than a stream lives in these tests: a stream is not a request still arriving. */
const REQUEST_TIMEOUT_MS = 1_000;
const IDENTITY = { header: 'http-remote-user', defaultUser: null };
const ALICE = { 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `event streams in-process (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    let url: string;
    let statements = 0;
    let uuid: string;
    const waiters = new PullWaiters();

    before(async () => {
      test = await openTestDatabase(backend);
      const counter: KyselyPlugin = {
        transformQuery: (args) => {
          statements++;
          return args.node;
        },
        transformResult: async (args) => args.result,
      };
      const counted: DatabaseHandle = { ...test.handle, db: test.handle.db.withPlugin(counter) };
      const clock = systemClock();
      app = await buildApp({ maxBodyBytes: 1 << 20, logger: 'silent', version: 'test', requestTimeoutMs: REQUEST_TIMEOUT_MS }, [
        eventmatchRoutes({
          database: test.handle,
          clock,
          secretKey: null,
          dialectMode: 'auto',
          userSubscriptions: 1000,
          targetGuard: defaultTargetGuard(),
          identity: IDENTITY,
        }),
        eventsRoutes({
          reader: pullReader({ database: counted, clock, databaseTimeoutMs: 5_000 }),
          waiters,
          identity: IDENTITY,
          streamKeepAliveMs: KEEP_ALIVE_MS,
        }),
      ]);
      await app.listen({ port: 0, host: '127.0.0.1' });
      url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
      const created = await app.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: ALICE,
        payload: { name: 'p', jsonpath: '$', delivery: 'pull' },
      });
      uuid = created.json<{ uuid: string }>().uuid;
    });
    after(async () => {
      await app?.close();
      await test?.close();
    });

    it('writes a keep-alive comment in each silence, and stays open past the request time-out', async () => {
      const stream = await EventStreamReader.open(`${url}/eventmatch/${uuid}/events/stream`, ALICE);
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
        Array.from({ length: STREAMS }, () => EventStreamReader.open(`${url}/eventmatch/${uuid}/events/stream`, ALICE)),
      );
      try {
        await eventually(() => waiters.size === STREAMS, `${STREAMS} waiters`, 30_000);
        const before = statements;
        // A measurement over a window, several keep-alives long: what idle streams cost.
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        const idle = statements - before;
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
      const clock = systemClock();
      const app = await buildApp({ maxBodyBytes: 1 << 20, logger: 'silent', version: 'test' }, [
        eventmatchRoutes({
          database: test.handle,
          clock,
          secretKey: null,
          dialectMode: 'auto',
          userSubscriptions: 1000,
          targetGuard: defaultTargetGuard(),
          identity: IDENTITY,
        }),
        eventsRoutes({ reader: pullReader({ database: test.handle, clock, databaseTimeoutMs: 5_000 }), waiters, identity: IDENTITY }),
      ]);
      try {
        await app.listen({ port: 0, host: '127.0.0.1' });
        const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
        const created = await app.inject({
          method: 'POST',
          url: '/eventmatch',
          headers: ALICE,
          payload: { name: 'p', jsonpath: '$', delivery: 'pull' },
        });
        const { uuid } = created.json<{ uuid: string }>();
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
