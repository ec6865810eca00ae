/**
 * NATS JetStream destinations end to end, as broker-delivery.test.ts does it for AMQP: the server
 * as a process, the shared NATS server on 127.0.0.1:4222 (a stream of the test's own, reached
 * through a TCP proxy where the test cuts or stops it), on every database. The NATS server
 * itself is never stopped or restarted.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { NATS_PORT, natsStream } from '../support/nats.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const USER = { 'http-remote-user': 'alice' };

interface Stored {
  disabled: string | null;
  error: string | null;
}

for (const backend of testBackends()) {
  describeOn(backend, `broker destinations: NATS JetStream (${backend.name})`, () => {
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

    async function subscribe(targetUrl: string, source: string, fields: object = {}): Promise<{ uuid: string; secret: string }> {
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

    it('publishes each event as sent: exact bytes, content type, signed with the subscription secret, recorded delivered', async (t: TestContext) => {
      const stream = await natsStream(t);
      const source = '/exact';
      const subscription = await subscribe(`nats://127.0.0.1:${NATS_PORT}/${stream.subject()}`, source, {
        auth: { type: 'basic', basic: { username: 'notifier', password: 's3cret' } },
      });
      const body = `{ "specversion":"1.0" , "type":"t", "source":"${source}", "id":"x1", "data": {"z": 1.50, "a": "\\u00e9 🎉"} }`;
      await send(body, 1);
      const [message] = await stream.received(1);
      assert.ok(Buffer.from(message!.data).equals(Buffer.from(body, 'utf8')), 'the exact bytes');
      assert.equal(message!.header.get('Content-Type'), 'application/cloudevents+json; charset=utf-8');
      const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((n) => [n, message!.header.get(n)]));
      assert.doesNotThrow(() => new Webhook(subscription.secret).verify(body, headers));
      assert.equal(message!.header.get('Nats-Msg-Id'), headers['webhook-id']);

      type History = Array<{ elm: string; state: string; attempts: Array<{ status: number | null; error: string | null }> }>;
      const read = async () =>
        (await (await fetch(`${server.url}/eventmatch/${subscription.uuid}/deliveries`, { headers: USER })).json()) as History;
      await eventually(async () => (await read())[0]?.state === 'delivered', 'recorded delivered');
      const [delivery] = await read();
      assert.equal(delivery!.elm, headers['webhook-id']);
      assert.deepEqual(
        delivery!.attempts.map(({ status, error }) => ({ status, error })),
        [{ status: null, error: null }],
      );
    });

    it('a subject no stream holds fails at once and disables the subscription, naming the subject', async (t: TestContext) => {
      const stream = await natsStream(t);
      const unheld = stream.unheldSubject();
      const subscription = await subscribe(`nats://127.0.0.1/${unheld}`, '/unheld');
      await send(event('/unheld', 'u1'));
      await eventually(async () => (await record(subscription.uuid)).disabled !== null, 'disabled');
      assert.equal((await record(subscription.uuid)).error, `no stream holds subject "${unheld}" (no responders)`);
    });

    it('connections cut mid-run are opened again, and every event is delivered', async (t: TestContext) => {
      const EVENTS = 300;
      const stream = await natsStream(t);
      const proxy = await startTcpProxy(NATS_PORT);
      t.after(() => proxy.close());
      await subscribe(`nats://127.0.0.1:${proxy.port}/${stream.subject()}`, '/cut');
      for (let i = 0; i < EVENTS; i++) {
        await send(event('/cut', `c${i}`));
        if (i % 60 === 30) proxy.cut();
      }
      await stream.received(EVENTS, 60_000);
      const ids = new Set(
        (await stream.received(EVENTS)).map((m) => (JSON.parse(Buffer.from(m.data).toString('utf8')) as { id: string }).id),
      );
      assert.equal(ids.size, EVENTS, 'every event, and (Nats-Msg-Id de-duplication) each once');
      assert.ok(proxy.accepted() >= 2, `connections opened again after the cuts (${proxy.accepted()})`);
      assert.ok(proxy.accepted() <= 12, `a connection kept and reused, not one per delivery (${proxy.accepted()})`);
    });

    it('a server that is down: its lane down, disabled at the end of the schedule; an HTTP subscription meanwhile is served', async (t: TestContext) => {
      const EVENTS = 3;
      const proxy = await startTcpProxy(NATS_PORT);
      t.after(() => proxy.close());
      await proxy.stop();
      const http = await startStub();
      stubs.push(http);
      const down = await subscribe(`nats://127.0.0.1:${proxy.port}/a.b`, '/down');
      await subscribe(http.url, '/down');
      for (let i = 0; i < EVENTS; i++) await send(event('/down', `d${i}`), 2);
      await eventually(() => http.requests.length === EVENTS, 'the HTTP target has every event');
      const downLanes = async () => /^notifications_target_origins_down 1$/m.test(await (await fetch(`${server.url}/metrics`)).text());
      await eventually(downLanes, 'the NATS lane is down');
      await eventually(async () => (await record(down.uuid)).disabled !== null, 'the NATS subscription disabled', 30_000);
      assert.equal((await record(down.uuid)).error, 'gave up after 4 attempts: connection refused');
    });
  });
}
