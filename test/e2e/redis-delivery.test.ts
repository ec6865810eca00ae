/**
 * Redis Streams destinations end to end: the server as a process, the shared Redis on
 * 127.0.0.1:6379 (read back with XRANGE, through a TCP proxy where the test cuts or stops it),
 * HTTP targets beside it, on every database. Redis itself is never stopped or restarted.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';
import { REDIS_PORT, testRedis } from '../support/redis.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const USER = { 'http-remote-user': 'alice' };

interface Subscription {
  uuid: string;
  secret: string;
}

interface Stored {
  disabled: string | null;
  error: string | null;
}

for (const backend of testBackends()) {
  describeOn(backend, `broker destinations: Redis Streams (${backend.name})`, () => {
    let database: TestDatabase;
    let server: RunningServer;
    const stubs: HttpStub[] = [];

    before(async () => {
      database = await backend.create();
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      server = await startServer({
        NOTIFICATIONS_DATABASE_URL: database.url,
        NOTIFICATIONS_RETRY_DELAYS: '200ms,200ms,200ms',
        NOTIFICATIONS_TARGET_TIMEOUT: '2s',
        NOTIFICATIONS_LEASE: '5s',
        NOTIFICATIONS_SECRET_KEY: randomBytes(32).toString('base64'),
        NOTIFICATIONS_LOG_LEVEL: 'warn',
      });
    });
    after(async () => {
      assert.equal(await server?.stop(), 0);
      for (const stub of stubs) await stub.close();
      await database?.cleanup();
    });

    async function subscribe(targetUrl: string, source: string, fields: object = {}): Promise<Subscription> {
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl, ...fields }),
      });
      assert.equal(created.status, 200, await created.clone().text());
      const { uuid } = (await created.json()) as { uuid: string };
      const read = await fetch(`${server.url}/eventmatch/${uuid}/secret`, { headers: USER });
      return { uuid, secret: ((await read.json()) as { secret: string }).secret };
    }

    async function record(uuid: string): Promise<Stored> {
      return (await (await fetch(`${server.url}/eventmatch/${uuid}`, { headers: USER })).json()) as Stored;
    }

    async function send(body: string, expectedMatches?: number): Promise<void> {
      const answer = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body,
      });
      assert.equal(answer.status, 200, await answer.clone().text());
      if (expectedMatches !== undefined) assert.equal(((await answer.json()) as { matches: number }).matches, expectedMatches);
    }

    const event = (source: string, id: string) => JSON.stringify({ specversion: '1.0', id, source, type: 't' });

    async function stub(): Promise<HttpStub> {
      const started = await startStub();
      stubs.push(started);
      return started;
    }

    it('adds each event as sent: exact bytes, content type, signed with the subscription secret, as HTTP gets it; with credentials', async (t: TestContext) => {
      const redis = await testRedis(t);
      const [plain, withUser] = [redis.stream(), redis.stream()];
      const password = randomBytes(12).toString('hex');
      const user = await redis.user(password);
      const http = await stub();
      const source = '/exact';
      const first = await subscribe(`redis://127.0.0.1:${REDIS_PORT}/${plain.key}`, source);
      const second = await subscribe(`redis://127.0.0.1/${withUser.key}`, source, {
        extensions: { tag: 'é✓' },
        auth: { type: 'basic', basic: { username: user, password } },
      });
      await subscribe(http.url, source, { extensions: { tag: 'é✓' } });
      const body = `{ "specversion":"1.0" , "type":"t", "source":"${source}", "id":"x1", "data": {"z": 1.50, "a": "\\u00e9 🎉"} }`;
      await send(body, 3);
      const [entry] = await plain.received(1);
      const [tagged] = await withUser.received(1);
      await eventually(() => http.requests.length === 1, 'the HTTP target has it');

      assert.ok(entry!.fields[0]![1].equals(Buffer.from(body, 'utf8')), 'the exact bytes, field cloudevent');
      assert.equal(entry!.field('content-type'), 'application/cloudevents+json; charset=utf-8');
      const headers = (e: typeof entry) => Object.fromEntries(e!.fields.slice(2).map(([name, value]) => [name, value.toString('utf8')]));
      assert.doesNotThrow(() => new Webhook(first.secret).verify(body, headers(entry)));
      assert.throws(() => new Webhook(second.secret).verify(body, headers(entry)), "another subscription's secret does not verify");

      assert.equal(tagged!.field('cloudevent'), http.requests[0]!.body, 'with its extensions, the very body HTTP gets');
      assert.equal(tagged!.field('content-type'), http.requests[0]!.headers['content-type']);
      assert.doesNotThrow(() => new Webhook(second.secret).verify(tagged!.field('cloudevent')!, headers(tagged)));

      type History = Array<{
        elm: string;
        state: string;
        target: number | null;
        attempts: Array<{ status: number | null; error: string | null }>;
      }>;
      const read = async () =>
        (await (await fetch(`${server.url}/eventmatch/${first.uuid}/deliveries`, { headers: USER })).json()) as History;
      await eventually(async () => (await read())[0]?.state === 'delivered', 'recorded delivered');
      const history = await read();
      assert.equal(history[0]!.target, null);
      assert.equal(entry!.field('webhook-id'), history[0]!.elm);
      assert.deepEqual(
        history[0]!.attempts.map(({ status, error }) => ({ status, error })),
        [{ status: null, error: null }],
      );
    });

    it('a key holding another type fails at once and disables the subscription, naming the key', async (t: TestContext) => {
      const redis = await testRedis(t);
      const key = await redis.stringKey();
      const subscription = await subscribe(`redis://127.0.0.1/${key}`, '/wrongtype');
      await send(event('/wrongtype', 'w1'));
      await eventually(async () => (await record(subscription.uuid)).disabled !== null, 'disabled');
      assert.equal(
        (await record(subscription.uuid)).error,
        `Redis refused to add to stream "${key}": WRONGTYPE Operation against a key holding the wrong kind of value`,
      );
    });

    it('connections cut mid-run are opened again, and every event is added at least once', async (t: TestContext) => {
      const EVENTS = 300;
      const redis = await testRedis(t);
      const stream = redis.stream();
      const proxy = await startTcpProxy(REDIS_PORT);
      t.after(() => proxy.close());
      await subscribe(`redis://127.0.0.1:${proxy.port}/${stream.key}`, '/cut');
      for (let i = 0; i < EVENTS; i++) {
        await send(event('/cut', `c${i}`));
        if (i % 60 === 30) proxy.cut();
      }
      const ids = async () => new Set((await stream.entries()).map((e) => (JSON.parse(e.field('cloudevent')!) as { id: string }).id));
      await eventually(async () => (await ids()).size === EVENTS, `all ${EVENTS} events in the stream`, 60_000);
      assert.ok(proxy.accepted() >= 2, `connections opened again after the cuts (${proxy.accepted()})`);
      assert.ok(proxy.accepted() <= 12, `a connection kept and reused, not one per delivery (${proxy.accepted()})`);
    });

    it('a Redis that is down: its lane down, retried, disabled at the end of the schedule; an HTTP subscription meanwhile is served', async (t: TestContext) => {
      const EVENTS = 3;
      const proxy = await startTcpProxy(REDIS_PORT);
      t.after(() => proxy.close());
      await proxy.stop();
      const http = await stub();
      const down = await subscribe(`redis://127.0.0.1:${proxy.port}/k`, '/down');
      await subscribe(http.url, '/down');
      for (let i = 0; i < EVENTS; i++) await send(event('/down', `d${i}`), 2);
      await eventually(() => http.requests.length === EVENTS, 'the HTTP target has every event');
      const downLanes = async () => /^notifications_target_origins_down 1$/m.test(await (await fetch(`${server.url}/metrics`)).text());
      await eventually(downLanes, 'the Redis lane is down');
      await eventually(async () => (await record(down.uuid)).disabled !== null, 'the Redis subscription disabled', 30_000);
      assert.equal((await record(down.uuid)).error, 'gave up after 4 attempts: connection refused');
    });
  });
}
