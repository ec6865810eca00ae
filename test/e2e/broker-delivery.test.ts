/**
 * Broker destinations end to end: the server as a process, the shared RabbitMQ on 127.0.0.1:5672
 * (consumed with a real consumer, through a TCP proxy where the test cuts or stops it), HTTP
 * targets beside it, on every database. The broker itself is never stopped or restarted.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';
import { RABBITMQ_PORT, rabbitmq } from '../support/rabbitmq.js';
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
  describeOn(backend, `broker destinations: AMQP (${backend.name})`, () => {
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
        // Credentials are sealed at rest: the outbound thread gets them opened.
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

    it('publishes each event as sent: exact bytes, persistent, content type, signed with the subscription secret, as HTTP gets it', async (t: TestContext) => {
      const rabbit = await rabbitmq(t);
      const [plain, extended] = [await rabbit.queue(), await rabbit.queue()];
      const http = await stub();
      const source = '/exact';
      const amqpPlain = await subscribe(`amqp://127.0.0.1:${RABBITMQ_PORT}/?routing_key=${plain.name}`, source);
      const exchange = await rabbit.exchange('direct', { queue: extended, routingKey: 'tagged' });
      const withTag = { extensions: { tag: 'é✓' } };
      const amqpExtended = await subscribe(`amqp://127.0.0.1/?exchange=${exchange}&routing_key=tagged`, source, {
        ...withTag,
        auth: { type: 'basic', basic: { username: 'guest', password: 'guest' } },
      });
      await subscribe(http.url, source, withTag);
      // The producer's own spacing, order and escapes.
      const body = `{ "specversion":"1.0" , "type":"t", "source":"${source}", "id":"x1", "data": {"z": 1.50, "a": "\\u00e9 🎉"} }`;
      await send(body, 3);
      await plain.received(1);
      await extended.received(1);
      await eventually(() => http.requests.length === 1, 'the HTTP target has it');

      const [message] = plain.messages;
      assert.ok(message!.content.equals(Buffer.from(body, 'utf8')), 'the exact bytes');
      assert.equal(message!.properties.contentType, 'application/cloudevents+json; charset=utf-8');
      assert.equal(message!.properties.deliveryMode, 2);
      const headers = message!.properties.headers as Record<string, string>;
      assert.doesNotThrow(() => new Webhook(amqpPlain.secret).verify(body, headers));
      assert.throws(() => new Webhook(amqpExtended.secret).verify(body, headers), "another subscription's secret does not verify");

      const tagged = extended.messages[0]!;
      assert.equal(tagged.content.toString('utf8'), http.requests[0]!.body, 'with its extensions, the very body HTTP gets');
      assert.equal(tagged.properties.contentType, http.requests[0]!.headers['content-type']);
      const taggedHeaders = tagged.properties.headers as Record<string, string>;
      assert.doesNotThrow(() => new Webhook(amqpExtended.secret).verify(tagged.content.toString('utf8'), taggedHeaders));

      type History = Array<{
        elm: string;
        state: string;
        target: number | null;
        attempts: Array<{ status: number | null; error: string | null }>;
      }>;
      const read = async () =>
        (await (await fetch(`${server.url}/eventmatch/${amqpPlain.uuid}/deliveries`, { headers: USER })).json()) as History;
      // The consumer may have the message before the server has the broker's confirmation and has recorded it.
      await eventually(async () => (await read())[0]?.state === 'delivered', 'recorded delivered');
      const history = await read();
      assert.equal(history.length, 1);
      assert.equal(history[0]!.state, 'delivered');
      assert.equal(history[0]!.target, null);
      assert.equal(headers['webhook-id'], history[0]!.elm);
      assert.deepEqual(
        history[0]!.attempts.map(({ status, error }) => ({ status, error })),
        [{ status: null, error: null }],
      );
    });

    it('a wrong password fails at once and disables the subscription, saying what the broker said', async (t: TestContext) => {
      const rabbit = await rabbitmq(t);
      const queue = await rabbit.queue();
      const wrong = await subscribe(`amqp://127.0.0.1/?routing_key=${queue.name}`, '/wrong', {
        auth: { type: 'basic', basic: { username: 'guest', password: 'not-guest' } },
      });
      await send(event('/wrong', 'w1'));
      await eventually(async () => (await record(wrong.uuid)).disabled !== null, 'disabled');
      const { error } = await record(wrong.uuid);
      assert.match(error ?? '', /^the broker refused the connection: ACCESS_REFUSED - Login was refused/);
      assert.equal(queue.messages.length, 0);
    });

    it('a missing exchange fails at once and disables the subscription, naming the exchange', async (t: TestContext) => {
      const rabbit = await rabbitmq(t);
      const missing = rabbit.unusedName();
      const subscription = await subscribe(`amqp://127.0.0.1/?exchange=${missing}&routing_key=k`, '/missing');
      await send(event('/missing', 'm1'));
      await eventually(async () => (await record(subscription.uuid)).disabled !== null, 'disabled');
      assert.equal(
        (await record(subscription.uuid)).error,
        `the broker refused to publish to exchange "${missing}": NOT_FOUND - no exchange '${missing}' in vhost '/'`,
      );
    });

    it('connections cut mid-run are opened again, and every event is delivered at least once', async (t: TestContext) => {
      const EVENTS = 300;
      const rabbit = await rabbitmq(t);
      const queue = await rabbit.queue();
      const proxy = await startTcpProxy(RABBITMQ_PORT);
      t.after(() => proxy.close());
      await subscribe(`amqp://127.0.0.1:${proxy.port}/?routing_key=${queue.name}`, '/cut');
      for (let i = 0; i < EVENTS; i++) {
        await send(event('/cut', `c${i}`));
        // Cut while deliveries are in flight, as a broker restart or a network cut would.
        if (i % 60 === 30) proxy.cut();
      }
      const ids = () => new Set(queue.messages.map((m) => (JSON.parse(m.content.toString('utf8')) as { id: string }).id));
      await eventually(() => ids().size === EVENTS, `all ${EVENTS} events in the queue`, 60_000);
      assert.ok(proxy.accepted() >= 2, `connections opened again after the cuts (${proxy.accepted()})`);
      assert.ok(proxy.accepted() <= 12, `a connection kept and reused, not one per delivery (${proxy.accepted()})`);
    });

    it('a broker that is down: its lane down, retried, disabled at the end of the schedule; an HTTP subscription meanwhile is served', async (t: TestContext) => {
      // Few: a down lane is probed once a second, one row at a time (pacing is measured in test/delivery/broker-runner.test.ts).
      const EVENTS = 3;
      const proxy = await startTcpProxy(RABBITMQ_PORT);
      t.after(() => proxy.close());
      await proxy.stop();
      const http = await stub();
      const down = await subscribe(`amqp://127.0.0.1:${proxy.port}/?routing_key=q`, '/down');
      await subscribe(http.url, '/down');
      for (let i = 0; i < EVENTS; i++) await send(event('/down', `d${i}`), 2);
      await eventually(() => http.requests.length === EVENTS, 'the HTTP target has every event');
      const downLanes = async () => /^notifications_target_origins_down 1$/m.test(await (await fetch(`${server.url}/metrics`)).text());
      await eventually(downLanes, 'the broker lane is down');
      await eventually(async () => (await record(down.uuid)).disabled !== null, 'the broker subscription disabled', 30_000);
      assert.equal((await record(down.uuid)).error, 'gave up after 4 attempts: connection refused');
    });
    it('with tracing on, the message carries the delivery span as a traceparent header', async (t: TestContext) => {
      const rabbit = await rabbitmq(t);
      const queue = await rabbit.queue();
      const receiver = await startOtlpReceiver();
      t.after(() => receiver.close());
      const traced = await startServer({
        NOTIFICATIONS_DATABASE_URL: database.url,
        NOTIFICATIONS_LOG_LEVEL: 'warn',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '50',
      });
      t.after(async () => void (await traced.stop()));
      const created = await fetch(`${traced.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'traced',
          jsonpath: "$[?$.source == '/traced']",
          target_url: `amqp://127.0.0.1/?routing_key=${queue.name}`,
        }),
      });
      assert.equal(created.status, 200);
      await fetch(`${traced.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: event('/traced', 't1'),
      });
      await queue.received(1);
      const traceparent = (queue.messages[0]!.properties.headers as Record<string, string>).traceparent ?? '';
      const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(traceparent) ?? [];
      assert.ok(traceId !== undefined, `a W3C traceparent: ${traceparent}`);
      await eventually(() => receiver.spans.some((span) => span.spanId === spanId), 'the delivery span exported');
      const span = receiver.spans.find((s) => s.spanId === spanId)!;
      assert.deepEqual(
        [span.name, span.traceId, span.attributes['notifications.destination'], span.attributes['notifications.outcome']],
        ['deliver', traceId, 'amqp://127.0.0.1:5672', 'accepted'],
      );
    });
  });
}
