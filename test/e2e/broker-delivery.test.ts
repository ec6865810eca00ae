/**
 * Broker destinations end to end: the server as a process, the shared RabbitMQ on 127.0.0.1:5672
 * (consumed with a real consumer, through a TCP proxy where the test cuts or stops it), HTTP
 * targets beside it, on every database. The broker itself is never stopped or restarted.
 */
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { brokerScene, event, exactBody, itReconnectsAfterCuts, itSurvivesTheBrokerDown, USER } from '../support/broker-e2e.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';
import { RABBITMQ_PORT, RABBITMQ_SKIP, rabbitmq } from '../support/rabbitmq.js';

for (const backend of testBackends()) {
  describeOn(backend, `broker destinations: AMQP (${backend.name})`, () => {
    const scene = brokerScene(backend);
    const { subscribe, record, send, stub } = scene;

    it(
      'publishes each event as sent: exact bytes, persistent, content type, signed with the subscription secret, as HTTP gets it',
      { skip: RABBITMQ_SKIP },
      async (t: TestContext) => {
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
        const body = exactBody(source);
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

        const history = await scene.delivered(amqpPlain.uuid);
        assert.equal(history.length, 1);
        assert.equal(history[0]!.state, 'delivered');
        assert.equal(history[0]!.target, null);
        assert.equal(headers['webhook-id'], history[0]!.elm);
        assert.deepEqual(
          history[0]!.attempts.map(({ status, error }) => ({ status, error })),
          [{ status: null, error: null }],
        );
      },
    );

    it(
      'a wrong password fails at once and disables the subscription, saying what the broker said',
      { skip: RABBITMQ_SKIP },
      async (t: TestContext) => {
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
      },
    );

    it(
      'a missing exchange fails at once and disables the subscription, naming the exchange',
      { skip: RABBITMQ_SKIP },
      async (t: TestContext) => {
        const rabbit = await rabbitmq(t);
        const missing = rabbit.unusedName();
        const subscription = await subscribe(`amqp://127.0.0.1/?exchange=${missing}&routing_key=k`, '/missing');
        await send(event('/missing', 'm1'));
        await eventually(async () => (await record(subscription.uuid)).disabled !== null, 'disabled');
        assert.equal(
          (await record(subscription.uuid)).error,
          `the broker refused to publish to exchange "${missing}": NOT_FOUND - no exchange '${missing}' in vhost '/'`,
        );
      },
    );

    itReconnectsAfterCuts(
      scene,
      RABBITMQ_PORT,
      async (t, proxyPort) => {
        const queue = await (await rabbitmq(t)).queue();
        return {
          url: `amqp://127.0.0.1:${proxyPort}/?routing_key=${queue.name}`,
          received: async (count, timeoutMs) => {
            await queue.received(count, timeoutMs);
            return queue.messages.map((m) => m.content.toString('utf8'));
          },
        };
      },
      { skip: RABBITMQ_SKIP },
    );

    itSurvivesTheBrokerDown(scene, 'RabbitMQ', (port) => `amqp://127.0.0.1:${port}/?routing_key=q`);

    it(
      'with tracing on, the message carries the delivery span as a traceparent header',
      { skip: RABBITMQ_SKIP },
      async (t: TestContext) => {
        const rabbit = await rabbitmq(t);
        const queue = await rabbit.queue();
        const receiver = await startOtlpReceiver();
        t.after(() => receiver.close());
        // A database of its own: on the suite's, the suite's server (untraced) could claim the
        // delivery as well, and which of the two sends it would be chance (and one SQLite file
        // serves one instance).
        const own = await backend.create();
        let traced: RunningServer | undefined;
        t.after(async () => {
          await traced?.stop();
          await own.cleanup();
        });
        assert.equal((await runCli(['--database-url', own.url, 'dbsync'])).code, 0);
        traced = await startServer({
          NOTIFICATIONS_DATABASE_URL: own.url,
          NOTIFICATIONS_LOG_LEVEL: 'warn',
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_BSP_SCHEDULE_DELAY: '50',
        });
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
        const received = await fetch(`${traced.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json' },
          body: event('/traced', 't1'),
        });
        assert.equal(received.status, 200, await received.text());
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
      },
    );
  });
}
