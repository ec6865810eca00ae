/**
 * Every error answer has a code: a walk over HTTP through the error answers of every route
 * (/eventmatch, its deliveries, /receive, the router and Node's parser), each checked for the
 * shape `{statusCode, error, code, message}`, its code the expected one and the catalogue's of
 * that status. The walk covers every code of the catalogue, so a new code needs a case here.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createConnection, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { eventmatchRoutes } from '../../src/api/eventmatch-routes.js';
import { openDatabase } from '../../src/db/connect.js';
import { logEvent } from '../../src/db/stores/events.js';
import { ERROR_CODES, type ErrorCode } from '../../src/errors.js';
import { peerList } from '../../src/net/peer-list.js';
import { targetConsent } from '../../src/subscriptions/target-consent.js';
import { systemClock } from '../../src/time/clock.js';
import { startApiApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { type HttpStub, startStub } from '../support/http-stub.js';
import { matchRow } from '../support/match-row.js';
import { defaultTargetGuard } from '../support/target-guard.js';
import { assertErrorShape, exchange, exchangeOne, type RawResponse, request } from './raw-http.js';

const MAX_BODY = 4096;
const TOKEN = 'receive-token';
const USER = { 'http-remote-user': 'walker' };
const JSON_TYPE = { ...USER, 'content-type': 'application/json' };
const EVENT_TYPE = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/cloudevents+json' };
/** Its target is a stub that consents to deliveries (the walk asks for consent), except at /refuses. */
let valid = { name: 'n', jsonpath: '$.data', target_url: '' };
const event = { specversion: '1.0', id: 'e-1', source: '/walk', type: 't' };
const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

interface Case {
  label: string;
  status: number;
  code: ErrorCode;
  /** The raw request; its answer is read until the server closes the connection. */
  send: () => Promise<RawResponse>;
}

for (const backend of testBackends()) {
  describeOn(backend, `every error answer has a code of the catalogue (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    let port = 0;
    /** A subscription whose stored dialect the service does not know, and one whose credentials do not open. */
    let unknownDialect = '';
    let sealed = '';
    /** A disabled subscription, and a delivery of a live one that another instance holds. */
    let disabled = '';
    let leased = '';
    let target: HttpStub;
    /** The same routes, believing no identity from loopback and taking no event from it. */
    let guarded: FastifyInstance;
    let guardedPort = 0;

    before(async () => {
      test = await openTestDatabase(backend);
      const clock = systemClock();
      target = await startStub((request, response) => {
        if (request.url === '/refuses') response.writeHead(405).end();
        else response.writeHead(200, { 'webhook-allowed-origin': '*' }).end();
      });
      valid = { ...valid, target_url: `${target.url}/` };
      app = await startApiApp(test.handle, {
        app: { maxBodyBytes: MAX_BODY, requestTimeoutMs: 500 },
        eventmatch: {
          targetConsent: targetConsent({ origin: 'walker.example', timeoutMs: 2_000, guard: defaultTargetGuard() }),
          // The three made below are all the walker may hold: a fourth is refused.
          userSubscriptions: 3,
        },
        receiveToken: TOKEN,
        // The one failed delivery seeded below is more than a recover takes.
        recoverLimit: 0,
      });
      await app.listen({ port: 0, host: '127.0.0.1' });
      port = (app.server.address() as { port: number }).port;
      const elsewhere = peerList(['10.0.0.0/8']);
      guarded = await startApiApp(test.handle, {
        app: { trustedProxies: elsewhere },
        identity: { trustedProxies: elsewhere },
        receiveAllow: elsewhere,
      });
      await guarded.listen({ port: 0, host: '127.0.0.1' });
      guardedPort = (guarded.server.address() as { port: number }).port;
      const create = async () =>
        (await app.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: valid })).json<{ uuid: string }>().uuid;
      [unknownDialect, sealed] = [await create(), await create()];
      disabled = (await app.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: { ...valid, disabled: true } })).json<{
        uuid: string;
      }>().uuid;
      leased = randomUUID();
      const eventUuid = randomUUID();
      const now = clock();
      await logEvent(
        test.handle.db,
        { uuid: eventUuid, source: '/walk', event_id: 'leased', type: 't', spec_version: '1.0', body: '{}', received: now },
        [
          matchRow({
            uuid: leased,
            event_uuid: eventUuid,
            subscription_uuid: unknownDialect,
            owner: 'walker',
            state: 'deliver',
            policy_code: 200,
            created: now,
            locked_until: now + 3_600_000_000,
            locked_by: 'another-instance',
          }),
          matchRow({ event_uuid: eventUuid, subscription_uuid: sealed, owner: 'walker', state: 'failed', policy_code: 200, created: now }),
        ],
      );
      await test.handle.db.updateTable('subscriptions').set({ dialect: 'xpath' }).where('uuid', '=', unknownDialect).execute();
      await test.handle.db
        .updateTable('subscriptions')
        .set({ auth: 'v1:c2VhbGVkIHdpdGggYSBrZXkgdGhpcyBhcHAgZG9lcyBub3QgaGF2ZQ==' })
        .where('uuid', '=', sealed)
        .execute();
    });
    after(async () => {
      await app?.close();
      await guarded?.close();
      await target?.close();
      await test?.close();
    });

    const send = (method: string, path: string, headers: Record<string, string>, body?: string) => () =>
      exchangeOne(port, request(method, path, headers, body));
    const create = (body: object) => send('POST', '/eventmatch', JSON_TYPE, JSON.stringify(body));
    const receive = (body: string, headers: Record<string, string> = EVENT_TYPE) => send('POST', '/receive', headers, body);
    const raw =
      (bytes: string, options: { end?: boolean } = {}) =>
      () =>
        exchangeOne(port, Buffer.from(bytes, 'latin1'), options);

    const cases = (): Case[] => [
      { label: 'a required field missing', status: 400, code: 'FIELD_REQUIRED', send: create({ name: 'n', jsonpath: '$' }) },
      { label: 'an unknown field', status: 400, code: 'FIELD_UNKNOWN', send: create({ ...valid, colour: 'blue' }) },
      { label: 'a field of the wrong type', status: 400, code: 'FIELD_TYPE', send: create({ ...valid, name: 5 }) },
      { label: 'a blank name', status: 400, code: 'FIELD_INVALID', send: create({ ...valid, name: ' ' }) },
      { label: 'an ftp target', status: 400, code: 'TARGET_URL_INVALID', send: create({ ...valid, target_url: 'ftp://example.org/' }) },
      {
        label: 'a denied target address',
        status: 400,
        code: 'TARGET_DENIED',
        send: create({ ...valid, target_url: 'http://169.254.169.254/' }),
      },
      {
        label: 'a target that does not consent',
        status: 400,
        code: 'TARGET_CONSENT_REFUSED',
        send: create({ ...valid, target_url: `${target.url}/refuses` }),
      },
      { label: 'a bad JSONPath', status: 400, code: 'JSONPATH_SYNTAX', send: create({ ...valid, jsonpath: '$.data[?@.size >' }) },
      { label: 'one subscription too many', status: 403, code: 'SUBSCRIPTION_LIMIT', send: create(valid) },
      { label: 'a bad limit', status: 400, code: 'QUERY_PARAMETER_INVALID', send: send('GET', '/eventmatch?limit=0', USER) },
      {
        label: 'an unknown parameter of deliveries',
        status: 400,
        code: 'QUERY_PARAMETER_INVALID',
        send: send('GET', `/eventmatch/${sealed}/deliveries?page=2`, USER),
      },
      { label: 'malformed JSON', status: 400, code: 'BODY_NOT_JSON', send: send('PUT', `/eventmatch/${sealed}`, JSON_TYPE, '{"name": ') },
      { label: 'malformed JSON to /receive', status: 400, code: 'BODY_NOT_JSON', send: receive('{"specversion": ') },
      {
        label: 'a body nested too deep',
        status: 400,
        code: 'BODY_TOO_DEEP',
        send: send('POST', `/eventmatch/${sealed}/test`, JSON_TYPE, nested(101)),
      },
      {
        label: 'a body cut short',
        status: 400,
        code: 'BODY_INCOMPLETE',
        send: raw(
          `POST /eventmatch HTTP/1.1\r\nHost: x\r\nHttp-Remote-User: walker\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{}`,
          { end: true },
        ),
      },
      {
        label: 'an event without source',
        status: 400,
        code: 'CLOUDEVENT_INVALID',
        send: receive(JSON.stringify({ ...event, source: undefined })),
      },
      {
        label: 'a bad ce- header',
        status: 400,
        code: 'CLOUDEVENT_INVALID',
        send: receive('x', {
          authorization: `Bearer ${TOKEN}`,
          'ce-specversion': '1.0',
          'ce-id': '%zz',
          'ce-source': '/s',
          'ce-type': 't',
        }),
      },
      {
        label: 'the identity header twice',
        status: 400,
        code: 'IDENTITY_HEADER_REPEATED',
        send: raw('GET /eventmatch HTTP/1.1\r\nHost: x\r\nHttp-Remote-User: a\r\nHttp-Remote-User: b\r\nConnection: close\r\n\r\n'),
      },
      { label: 'a path that is not percent-encoding', status: 400, code: 'PATH_INVALID', send: send('GET', '/eventmatch/%zz', USER) },
      { label: 'not HTTP', status: 400, code: 'REQUEST_INVALID', send: raw('HELLO\r\n\r\n') },
      { label: 'no identity', status: 401, code: 'UNAUTHENTICATED', send: send('GET', '/eventmatch', {}) },
      {
        label: 'no identity for deliveries',
        status: 401,
        code: 'UNAUTHENTICATED',
        send: send('GET', `/eventmatch/${sealed}/deliveries`, {}),
      },
      {
        label: 'an identity from a peer that is not a trusted proxy',
        status: 401,
        code: 'IDENTITY_UNTRUSTED',
        send: () => exchangeOne(guardedPort, request('GET', '/eventmatch', USER)),
      },
      {
        label: 'no receive token',
        status: 401,
        code: 'UNAUTHENTICATED',
        send: receive(JSON.stringify(event), { 'content-type': 'application/cloudevents+json' }),
      },
      {
        label: 'an unknown subscription',
        status: 404,
        code: 'SUBSCRIPTION_NOT_FOUND',
        send: send('GET', '/eventmatch/0190d4c2-0000-7000-8000-000000000000', USER),
      },
      { label: 'a malformed uuid', status: 404, code: 'SUBSCRIPTION_NOT_FOUND', send: send('DELETE', '/eventmatch/not-a-uuid', USER) },
      {
        label: "someone else's deliveries",
        status: 404,
        code: 'SUBSCRIPTION_NOT_FOUND',
        send: send('GET', `/eventmatch/${sealed}/deliveries`, { 'http-remote-user': 'mallory' }),
      },
      {
        label: 'retrying a delivery the subscription does not have',
        status: 404,
        code: 'DELIVERY_NOT_FOUND',
        send: send('POST', `/eventmatch/${unknownDialect}/deliveries/0190d4c2-0000-7000-8000-000000000000/retry`, USER),
      },
      {
        label: 'the event of a delivery the subscription does not have',
        status: 404,
        code: 'DELIVERY_NOT_FOUND',
        send: send('GET', `/eventmatch/${unknownDialect}/deliveries/0190d4c2-0000-7000-8000-000000000000/event`, USER),
      },
      {
        label: 'retrying a delivery of a disabled subscription',
        status: 409,
        code: 'SUBSCRIPTION_DISABLED',
        send: send('POST', `/eventmatch/${disabled}/deliveries/0190d4c2-0000-7000-8000-000000000000/retry`, USER),
      },
      {
        label: 'recovering the deliveries of a disabled subscription',
        status: 409,
        code: 'SUBSCRIPTION_DISABLED',
        send: send('POST', `/eventmatch/${disabled}/deliveries/recover`, JSON_TYPE, '{"since":"2000-01-01T00:00:00"}'),
      },
      {
        label: 'recovering a window of more deliveries than one recover takes',
        status: 400,
        code: 'RECOVER_WINDOW_TOO_LARGE',
        send: send('POST', `/eventmatch/${sealed}/deliveries/recover`, JSON_TYPE, '{"since":"2000-01-01T00:00:00"}'),
      },
      {
        label: 'reading the events of a push subscription',
        status: 409,
        code: 'SUBSCRIPTION_NOT_PULL',
        send: send('GET', `/eventmatch/${disabled}/events`, USER),
      },
      {
        label: 'retrying a delivery another instance holds',
        status: 409,
        code: 'DELIVERY_IN_PROGRESS',
        send: send('POST', `/eventmatch/${unknownDialect}/deliveries/${leased}/retry`, USER),
      },
      {
        label: 'an event from a peer outside the receive allow-list',
        status: 403,
        code: 'RECEIVE_FORBIDDEN',
        send: () => exchangeOne(guardedPort, request('POST', '/receive', EVENT_TYPE, JSON.stringify(event))),
      },
      {
        label: "a secret rotation a browser sends for another site's page",
        status: 403,
        code: 'CROSS_SITE_REQUEST',
        send: send('POST', `/eventmatch/${disabled}/secret/rotate`, { ...USER, 'sec-fetch-site': 'cross-site' }),
      },
      { label: 'an unknown route', status: 404, code: 'ROUTE_NOT_FOUND', send: send('GET', '/nothing', USER) },
      { label: 'a method the path does not take', status: 405, code: 'METHOD_NOT_ALLOWED', send: send('PATCH', '/eventmatch', USER) },
      { label: 'GET /receive', status: 405, code: 'METHOD_NOT_ALLOWED', send: send('GET', '/receive', {}) },
      {
        label: 'a body that does not arrive',
        status: 408,
        code: 'REQUEST_TIMEOUT',
        send: () =>
          exchange(port, `POST /receive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 10\r\n\r\n{}`).then(
            (answers) => answers[0]!,
          ),
      },
      { label: 'a body over the limit', status: 413, code: 'BODY_TOO_LARGE', send: create({ ...valid, name: 'x'.repeat(MAX_BODY) }) },
      {
        label: 'an event over the limit',
        status: 413,
        code: 'BODY_TOO_LARGE',
        send: receive(JSON.stringify({ ...event, data: 'x'.repeat(MAX_BODY) })),
      },
      {
        label: 'text/plain to /eventmatch',
        status: 415,
        code: 'MEDIA_TYPE_UNSUPPORTED',
        send: send('POST', '/eventmatch', { ...USER, 'content-type': 'text/plain' }, 'x'),
      },
      {
        label: 'text/plain to /receive',
        status: 415,
        code: 'MEDIA_TYPE_UNSUPPORTED',
        send: receive('x', { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' }),
      },
      {
        label: 'a gzip body',
        status: 415,
        code: 'CONTENT_ENCODING_UNSUPPORTED',
        send: receive(JSON.stringify(event), { ...EVENT_TYPE, 'content-encoding': 'gzip' }),
      },
      {
        label: 'headers over 16 KiB',
        status: 431,
        code: 'HEADERS_TOO_LARGE',
        send: send('GET', '/eventmatch', { ...USER, 'x-filler': 'x'.repeat(20_000) }),
      },
      {
        label: 'a stored dialect unknown to the service',
        status: 500,
        code: 'INTERNAL',
        send: send('POST', `/eventmatch/${unknownDialect}/test`, JSON_TYPE, '{}'),
      },
      {
        label: 'stored credentials that do not open',
        status: 500,
        code: 'CREDENTIALS_UNREADABLE',
        send: send('GET', `/eventmatch/${sealed}`, USER),
      },
    ];

    it('walks the error answers of every route, each with the expected code', async () => {
      const walked = new Set<ErrorCode>();
      for (const { label, status, code, send } of cases()) {
        const response = await send();
        try {
          assertErrorShape(response, status, undefined, code);
        } catch (error) {
          assert.fail(`${label}: ${(error as Error).message}`);
        }
        walked.add(code);
      }
      // The next tests answer these: from an app whose database cannot be reached, and from one that is stopping.
      walked.add('DATABASE_UNAVAILABLE');
      walked.add('SHUTTING_DOWN');
      // test/e2e/storage-full.test.ts answers it, from servers whose database is out of space.
      walked.add('STORAGE_FULL');
      assert.deepEqual(
        ERROR_CODES.filter((code) => !walked.has(code)),
        [],
        'every code of the catalogue is walked',
      );
    });
  });
}

describe('an error answer while the database cannot be reached', () => {
  it('is 503 DATABASE_UNAVAILABLE, with Retry-After', async () => {
    const database = openDatabase('postgres://postgres@127.0.0.1:1/nowhere', { timeoutMs: 500 });
    const identity = { header: 'http-remote-user', defaultUser: null };
    const app = await buildApp({ maxBodyBytes: MAX_BODY, logger: 'silent', version: 'test', databaseTimeoutMs: 500 }, [
      eventmatchRoutes({
        database,
        clock: systemClock(),
        secretKey: null,
        dialectMode: 'auto',
        userSubscriptions: 1000,
        targetGuard: defaultTargetGuard(),
        identity,
      }),
    ]);
    try {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const port = (app.server.address() as { port: number }).port;
      const response = await exchangeOne(port, request('GET', '/eventmatch', USER));
      assertErrorShape(response, 503, /^database: /, 'DATABASE_UNAVAILABLE');
      assert.equal(response.headers['retry-after'], '1');
    } finally {
      await app.close();
      await database.close();
    }
  });
});

describe('a server that is stopping', { timeout: 20_000 }, () => {
  /** An app with GET /slow/:n, which answers once its gate is opened, and GET /fast. */
  async function gatedApp(preClose?: () => Promise<void>) {
    const entered: Array<() => void> = [];
    const gates: Array<() => void> = [];
    const app = await buildApp({ maxBodyBytes: MAX_BODY, logger: 'silent', version: 'test' }, [
      (routes) => {
        routes.get('/slow/:n', async () => {
          await new Promise<void>((release) => {
            gates.push(release);
            entered.shift()?.();
          });
          return { done: true };
        });
        routes.get('/fast', async () => ({ done: true }));
        if (preClose) routes.addHook('preClose', preClose);
      },
    ]);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const connect = async () => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      await once(socket, 'connect');
      return socket;
    };
    const inFlight = async (socket: Socket, n: number) => {
      const handled = new Promise<void>((resolve) => entered.push(resolve));
      socket.write(`GET /slow/${n} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await handled;
    };
    return { app, gates, connect, inFlight };
  }

  /** The next answer on `socket`, head and body; then whether the server closed the connection. */
  const answer = (socket: Socket) =>
    new Promise<{ head: string; body: string; closed: Promise<void> }>((resolve, reject) => {
      let text = '';
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      socket.once('close', () => reject(new Error(`the connection closed before an answer: ${JSON.stringify(text)}`)));
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        const [head = '', body = ''] = text.split('\r\n\r\n');
        if (body.endsWith('}')) resolve({ head, body, closed });
      });
    });

  it('answers the requests in flight with Connection: close, and stops without waiting for their connections to idle out', async () => {
    const { app, gates, connect, inFlight } = await gatedApp();
    const socket = await connect();
    try {
      await inFlight(socket, 1);
      const stopped = app.close();
      await new Promise((resolve) => setImmediate(resolve));
      const answered = answer(socket);
      gates[0]!();
      const { head, body, closed } = await answered;
      assert.match(head, /^HTTP\/1\.1 200/);
      assert.match(head, /\r\nconnection: close/i);
      assert.deepEqual(JSON.parse(body), { done: true });
      // Node closes the connection after that answer; kept alive, it would hold the stop for 72 s.
      await closed;
      await stopped;
    } finally {
      socket.destroy();
      for (const release of gates) release();
      await app.close();
    }
  });

  it('answers 503 SHUTTING_DOWN to a request on a connection kept alive from before, and closes it', async () => {
    // Holds the stop after it has begun and before the server stops listening.
    let holdStop!: () => void;
    let stopHeld!: () => void;
    const held = new Promise<void>((resolve) => (stopHeld = resolve));
    const { app, gates, connect } = await gatedApp(async () => {
      stopHeld();
      await new Promise<void>((release) => (holdStop = release));
    });
    const socket = await connect();
    try {
      const first = answer(socket);
      socket.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.doesNotMatch((await first).head, /connection: close/i, 'kept alive before the stop');
      socket.removeAllListeners('data');
      socket.removeAllListeners('close');

      const stopped = app.close();
      await held;
      const refused = answer(socket);
      socket.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
      const { head, body, closed } = await refused;
      assert.match(head, /^HTTP\/1\.1 503/);
      assert.match(head, /\r\nconnection: close/i);
      assert.deepEqual(JSON.parse(body), {
        statusCode: 503,
        error: 'Service Unavailable',
        code: 'SHUTTING_DOWN',
        message: 'server: shutting down; send the request again, on a new connection',
      });
      await closed;
      holdStop();
      await stopped;
    } finally {
      socket.destroy();
      holdStop?.();
      for (const release of gates) release();
      await app.close();
    }
  });
});
