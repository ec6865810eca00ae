import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it, type TestContext } from 'node:test';
import { classifyNoAnswer, classifyResponse } from '../../src/delivery/decision.js';
import { createTargetClient, type TargetClientOptions } from '../../src/delivery/target-client.js';
import { type AddressRules, addressGuard } from '../../src/net/address-guard.js';
import { eventually } from '../support/http-stub.js';
import { type ReceivedRequest, type StubServer, startStubServer, unusedPort } from './stub-server.js';

const DEFAULT_RULES: AddressRules = { allow: [], deny: ['169.254.0.0/16', 'fe80::/10', '100.100.100.200/32', 'fd00:ec2::254/128'] };
const EVENT = JSON.stringify({ specversion: '1.0', id: 'e-1', source: '/metadata', type: 'org.example.upload', data: { name: 'ü.txt' } });

async function server(t: TestContext, answer: (request: ReceivedRequest, response: ServerResponse) => void): Promise<StubServer> {
  const stub = await startStubServer(answer);
  t.after(() => stub.close());
  return stub;
}

function client(t: TestContext, options: Partial<TargetClientOptions> & { rules?: AddressRules } = {}) {
  const { rules = DEFAULT_RULES, ...rest } = options;
  const target = createTargetClient({ timeoutMs: 2000, connectionsPerOrigin: 4, guard: addressGuard(rules), ...rest });
  t.after(() => target.close());
  return target;
}

const reply =
  (status: number, body = '', headers: Record<string, string> = {}) =>
  (_request: ReceivedRequest, response: ServerResponse) => {
    response.writeHead(status, headers).end(body);
  };

describe('target client: answers', () => {
  it('POSTs the event as structured CloudEvents JSON, without Authorization when there is no auth', async (t) => {
    const stub = await server(t, reply(200, 'thanks'));
    const response = await client(t).post({ url: `${stub.origin}/hooks/1?tag=a`, auth: {}, body: EVENT });
    assert.equal(response.status, 200);
    assert.equal(response.error, null);
    assert.equal(response.bodyExcerpt, 'thanks');
    assert.equal(response.retryAfterMs, undefined);
    assert.ok(response.durationMs >= 0 && response.durationMs < 2000);
    const [received] = stub.received;
    assert.equal(received?.method, 'POST');
    assert.equal(received?.url, '/hooks/1?tag=a');
    assert.equal(received?.headers['content-type'], 'application/cloudevents+json; charset=utf-8');
    assert.equal(received?.headers.authorization, undefined);
    assert.equal(received?.body, EVENT);
    assert.deepEqual(classifyResponse(200), { kind: 'delivered' });
  });

  it('sends basic auth as base64 of username:password in UTF-8', async (t) => {
    const stub = await server(t, reply(204));
    const response = await client(t).post({
      url: stub.origin,
      auth: { type: 'basic', basic: { username: 'alice', password: 'pa:ss wörd' } },
      body: EVENT,
    });
    assert.equal(response.status, 204);
    assert.equal(stub.received[0]?.headers.authorization, `Basic ${Buffer.from('alice:pa:ss wörd').toString('base64')}`);
    assert.equal(stub.received[0]?.url, '/');
  });

  it('sends header auth as "<type> <credentials>"', async (t) => {
    const stub = await server(t, reply(202));
    const response = await client(t).post({
      url: `${stub.origin}/h`,
      auth: { type: 'header', header: { type: 'Bearer', credentials: 'tok.en-1' } },
      body: EVENT,
    });
    assert.equal(response.status, 202);
    assert.equal(stub.received[0]?.headers.authorization, 'Bearer tok.en-1');
    assert.equal(stub.received[0]?.body, EVENT);
  });

  it('returns a 404 with the body in the excerpt: a permanent failure', async (t) => {
    const stub = await server(t, reply(404, 'no hook here'));
    const response = await client(t).post({ url: `${stub.origin}/gone`, auth: {}, body: EVENT });
    assert.deepEqual([response.status, response.error, response.bodyExcerpt], [404, null, 'no hook here']);
    assert.deepEqual(classifyResponse(404, response), {
      kind: 'permanent',
      reason: 'target answered 404 Not Found: no hook here',
    });
  });

  it('returns a 500: to be retried', async (t) => {
    const stub = await server(t, reply(500, 'oops'));
    const response = await client(t).post({ url: stub.origin, auth: {}, body: EVENT });
    assert.equal(response.status, 500);
    assert.equal(classifyResponse(500, response).kind, 'retry');
  });

  it('reads Retry-After of a 429 in seconds', async (t) => {
    const stub = await server(t, reply(429, '', { 'retry-after': '7' }));
    const response = await client(t).post({ url: stub.origin, auth: {}, body: EVENT });
    assert.equal(response.status, 429);
    assert.equal(response.retryAfterMs, 7000);
    assert.deepEqual(classifyResponse(429, response), {
      kind: 'retry',
      retryAfterMs: 7000,
      reason: 'target answered 429 Too Many Requests',
    });
  });

  it('reads Retry-After of a 429 as an HTTP date, against the clock given', async (t) => {
    const stub = await server(t, reply(429, '', { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' }));
    const response = await client(t, { now: () => Date.UTC(2015, 9, 21, 7, 26, 0) }).post({ url: stub.origin, auth: {}, body: EVENT });
    assert.equal(response.retryAfterMs, 120_000);
  });

  it('does not follow a redirect: the 3xx is the answer', async (t) => {
    const elsewhere = await server(t, reply(200));
    const stub = await server(t, reply(301, 'moved', { location: `${elsewhere.origin}/new` }));
    const response = await client(t).post({
      url: stub.origin,
      auth: { type: 'header', header: { type: 'Bearer', credentials: 'secret' } },
      body: EVENT,
    });
    assert.equal(response.status, 301);
    assert.equal(elsewhere.received.length, 0);
    assert.equal(response.location, `${elsewhere.origin}/new`);
    assert.deepEqual(classifyResponse(301, response), {
      kind: 'permanent',
      reason: `target answered 301 Moved Permanently to ${elsewhere.origin}/new (redirects are not followed): moved`,
    });
  });

  it('keeps the first 1 KiB of the body, dropping a character cut in two', async (t) => {
    const stub = await server(t, reply(400, `a${'é'.repeat(3000)}`));
    const response = await client(t).post({ url: stub.origin, auth: {}, body: EVENT });
    assert.equal(response.bodyExcerpt, `a${'é'.repeat(511)}`);
    assert.equal(Buffer.byteLength(response.bodyExcerpt), 1023);
  });
});

describe('target client: connections', () => {
  it('reuses one connection for many sequential posts', async (t) => {
    const stub = await server(t, reply(200, 'x'.repeat(10_000)));
    const target = client(t, { connectionsPerOrigin: 1 });
    for (let i = 0; i < 25; i++) assert.equal((await target.post({ url: `${stub.origin}/h`, auth: {}, body: EVENT })).status, 200);
    assert.equal(stub.received.length, 25);
    assert.equal(stub.connections(), 1);
  });

  it('uses few connections for sequential posts when more are allowed', async (t) => {
    const stub = await server(t, reply(200, 'ok'));
    const target = client(t, { connectionsPerOrigin: 8 });
    for (let i = 0; i < 25; i++) await target.post({ url: stub.origin, auth: {}, body: EVENT });
    // undici's pool frees a connection a tick after its answer is read, so the
    // second post may open a second connection; after that they alternate.
    assert.ok(stub.connections() <= 2, `${stub.connections()} connections`);
  });

  it('opens at most connectionsPerOrigin connections to one origin', async (t) => {
    const stub = await server(t, (_request, response) => setTimeout(() => response.end('ok'), 30));
    const target = client(t, { connectionsPerOrigin: 2 });
    const responses = await Promise.all(Array.from({ length: 12 }, () => target.post({ url: stub.origin, auth: {}, body: EVENT })));
    assert.ok(responses.every((r) => r.status === 200));
    assert.equal(stub.connections(), 2);
  });

  it('starts the time-out when a connection is free: requests waiting for one do not time out', async (t) => {
    // One connection, held by a first request the target never answers: the second waits for it
    // through the first's whole time-out, however slowly a loaded machine runs, then is answered
    // at once. Were its wait counted, its time-out would come with the first's.
    const timeoutMs = 2_000;
    const stub = await server(t, (request, response) => {
      if (request.url === '/second') response.end('ok');
    });
    const target = client(t, { connectionsPerOrigin: 1, timeoutMs });
    const [first, second] = await Promise.all([
      target.post({ url: `${stub.origin}/first`, auth: {}, body: EVENT }),
      target.post({ url: `${stub.origin}/second`, auth: {}, body: EVENT }),
    ]);
    assert.deepEqual([first.status, first.error], [null, `time-out after ${timeoutMs} ms`], 'the first held the connection');
    assert.deepEqual([second.status, second.error], [200, null], 'the second, sent once the connection came free');
    assert.ok(second.durationMs < timeoutMs, `the exchange took ${second.durationMs} ms: the wait was counted`);
    assert.deepEqual(
      stub.received.map((r) => r.url),
      ['/first', '/second'],
    );
  });

  it('does not send a request that could not finish by endWithinMs once a connection is free: it comes back busy', async (t) => {
    // The target answers when the test says: the one connection stays busy as long as the test
    // needs, and the first request's time-out is far beyond what a loaded machine takes to get there.
    const held: ServerResponse[] = [];
    const stub = await server(t, (_request, response) => void held.push(response));
    const timeoutMs = 10_000;
    const target = client(t, { connectionsPerOrigin: 1, timeoutMs });
    const first = target.post({ url: stub.origin, auth: {}, body: EVENT });
    const started = performance.now();
    // May wait 300 ms for the connection (endWithinMs less the time-out); it stays busy.
    const busy = await target.post({ url: stub.origin, auth: {}, body: EVENT, endWithinMs: timeoutMs + 300 });
    const waited = performance.now() - started;
    // Busy, with the connection still held: it gave up rather than wait for the first to end.
    assert.deepEqual([busy.busy, busy.status, busy.durationMs], [true, null, 0]);
    assert.equal(busy.error, `not sent: every connection to ${stub.origin} stayed busy`);
    assert.ok(waited >= 290, `gave up after ${waited} ms, without waiting the 300 ms it had`);
    // May wait 10 s: gets the connection when the first answer is in.
    const waiting = target.post({ url: stub.origin, auth: {}, body: EVENT, endWithinMs: timeoutMs + 10_000 });
    await eventually(() => held.length === 1, 'the first request at the target');
    held[0]!.end('ok');
    assert.equal((await first).status, 200);
    await eventually(() => held.length === 2, 'the waiting request at the target');
    held[1]!.end('ok');
    const sent = await waiting;
    assert.deepEqual([sent.busy, sent.status], [undefined, 200]);
    assert.equal(stub.received.length, 2, 'the busy one was never sent');
  });

  it('sends at once when a connection is free, however little time is left', async (t) => {
    const stub = await server(t, reply(200));
    const response = await client(t, { timeoutMs: 500 }).post({ url: stub.origin, auth: {}, body: EVENT, endWithinMs: 0 });
    assert.deepEqual([response.busy, response.status], [undefined, 200]);
  });

  it('gives up a connection rather than read a body past 64 KiB', async (t) => {
    const stub = await server(t, (request, response) => response.end(request.url === '/big' ? 'x'.repeat(1024 * 1024) : 'ok'));
    const target = client(t, { connectionsPerOrigin: 1 });
    assert.equal((await target.post({ url: `${stub.origin}/small`, auth: {}, body: EVENT })).status, 200);
    const big = await target.post({ url: `${stub.origin}/big`, auth: {}, body: EVENT });
    assert.deepEqual([big.status, big.error, big.bodyExcerpt.length], [200, null, 1024]);
    assert.equal(stub.connections(), 1);
    assert.equal((await target.post({ url: `${stub.origin}/small`, auth: {}, body: EVENT })).status, 200);
    assert.equal(stub.connections(), 2);
  });

  it('refuses to post once closed', async (t) => {
    const target = client(t);
    await target.close();
    await assert.rejects(target.post({ url: 'http://127.0.0.1:9/', auth: {}, body: EVENT }), /closed/);
  });
});

describe('target client: failures', () => {
  it('times out a target slower than the time-out, at the time-out', async (t) => {
    const stub = await server(t, () => {}); // never answers
    const started = performance.now();
    const response = await client(t, { timeoutMs: 300 }).post({ url: stub.origin, auth: {}, body: EVENT });
    const elapsed = performance.now() - started;
    assert.deepEqual([response.status, response.error, response.bodyExcerpt], [null, 'time-out after 300 ms', '']);
    // Without the time-out it would wait for ever: the bound only needs to hold on a loaded machine.
    assert.ok(response.durationMs >= 295 && elapsed < 5_000, `took ${elapsed} ms`);
    assert.deepEqual(classifyNoAnswer(response.error!, response.permanent), { kind: 'retry', reason: 'time-out after 300 ms' });
  });

  it('times out a body that does not finish, keeping the status that came', async (t) => {
    const stub = await server(t, (_request, response) => {
      response.writeHead(200, { 'content-length': '100' });
      response.write('partial');
    });
    const response = await client(t, { timeoutMs: 300 }).post({ url: stub.origin, auth: {}, body: EVENT });
    assert.deepEqual([response.status, response.error, response.bodyExcerpt], [200, 'time-out after 300 ms', 'partial']);
    assert.ok(response.durationMs >= 295 && response.durationMs < 5_000, `took ${response.durationMs} ms`);
  });

  it('reports a refused connection', async (t) => {
    const port = await unusedPort();
    const response = await client(t).post({ url: `http://127.0.0.1:${port}/`, auth: {}, body: EVENT });
    assert.deepEqual([response.status, response.error], [null, 'connection refused']);
    assert.equal(classifyNoAnswer(response.error!, response.permanent).kind, 'retry');
  });

  it('reports a name that does not resolve', async (t) => {
    const response = await client(t).post({ url: 'http://no-such-host.invalid/', auth: {}, body: EVENT });
    assert.equal(response.status, null);
    assert.match(response.error ?? '', /^DNS lookup of no-such-host\.invalid failed/);
    assert.equal(classifyNoAnswer(response.error!, response.permanent).kind, 'retry');
  });

  it('reports an unusable URL as permanent', async (t) => {
    const target = client(t);
    const ftp = await target.post({ url: 'ftp://127.0.0.1/', auth: {}, body: EVENT });
    assert.equal(ftp.error, 'target URL is not usable: ftp: is not http: or https:');
    const relative = await target.post({ url: '/hook', auth: {}, body: EVENT });
    assert.equal(relative.error, 'target URL is not usable: not an absolute URL');
    assert.equal(classifyNoAnswer(relative.error!, relative.permanent).kind, 'permanent');
  });
});

describe('target client: address guard', () => {
  it('refuses an IP literal denied by configuration without connecting', async (t) => {
    const stub = await server(t, reply(200));
    const response = await client(t, { rules: { allow: [], deny: ['127.0.0.0/8'] } }).post({ url: stub.origin, auth: {}, body: EVENT });
    assert.deepEqual([response.status, response.error], [null, 'address 127.0.0.1 is denied by NOTIFICATIONS_TARGET_DENY']);
    assert.equal(classifyNoAnswer(response.error!, response.permanent).kind, 'permanent');
    assert.equal(stub.connections(), 0);
  });

  it('refuses a name that resolves to denied addresses only', async (t) => {
    const stub = await server(t, reply(200));
    const response = await client(t, { rules: { allow: [], deny: ['127.0.0.0/8', '::1/128'] } }).post({
      url: `http://localhost:${stub.port}/`,
      auth: {},
      body: EVENT,
    });
    assert.equal(response.status, null);
    assert.match(
      response.error ?? '',
      /^every address of localhost is refused: address (127\.0\.0\.1|::1) is denied by NOTIFICATIONS_TARGET_DENY/,
    );
    assert.equal(classifyNoAnswer(response.error!, response.permanent).kind, 'permanent');
    assert.equal(stub.connections(), 0);
  });

  it('refuses the metadata address by default, also written as IPv4-mapped IPv6', async (t) => {
    const target = client(t);
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[::ffff:169.254.169.254]/', 'http://[::ffff:a9fe:a9fe]:8080/']) {
      const response = await target.post({ url, auth: {}, body: EVENT });
      assert.equal(response.error, 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY', url);
    }
  });

  it('judges an IPv4-mapped literal by the IPv4 rules', async (t) => {
    const stub = await server(t, reply(200));
    const response = await client(t, { rules: { allow: [], deny: ['127.0.0.0/8'] } }).post({
      url: `http://[::ffff:127.0.0.1]:${stub.port}/`,
      auth: {},
      body: EVENT,
    });
    assert.equal(response.error, 'address 127.0.0.1 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.equal(stub.connections(), 0);
  });

  it('delivers only to addresses in the allow list when there is one', async (t) => {
    const stub = await server(t, reply(200));
    const outside = await client(t, { rules: { allow: ['10.0.0.0/8'], deny: [] } }).post({ url: stub.origin, auth: {}, body: EVENT });
    assert.equal(outside.error, 'address 127.0.0.1 is not in NOTIFICATIONS_TARGET_ALLOW');
    const inside = client(t, { rules: { allow: ['127.0.0.0/8', '::1/128'], deny: [] } });
    assert.equal((await inside.post({ url: stub.origin, auth: {}, body: EVENT })).status, 200);
    assert.equal((await inside.post({ url: `http://localhost:${stub.port}/`, auth: {}, body: EVENT })).status, 200);
  });
});
