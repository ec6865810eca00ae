/**
 * Publishing to the real RabbitMQ on 127.0.0.1:5672, consumed with a real consumer: what each
 * message carries, what the broker's refusals come to, and the connections: kept, reused, opened
 * again after they are cut, and never made to an address the guard refuses. A TCP proxy in front
 * of the broker stands for a broker that goes away; the broker itself is never touched.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { BROKER_CONTENT_TYPE } from '../../src/delivery/broker-destination.js';
import { type BrokerClient, type BrokerRequest, createBrokerPublisher } from '../../src/delivery/broker-publisher.js';
import { addressGuard } from '../../src/net/address-guard.js';
import type { Auth } from '../../src/subscriptions/input.js';
import { freePort } from '../support/processes.js';
import { RABBITMQ_PORT, rabbitmq } from '../support/rabbitmq.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

function publisher(t: TestContext, { deny = [] as string[], timeoutMs = 5_000 } = {}): BrokerClient {
  const client = createBrokerPublisher({ timeoutMs, guard: addressGuard({ allow: [], deny }) });
  t.after(() => client.close());
  return client;
}

function request(url: string, { body = '{"specversion":"1.0","id":"1"}', auth = {} as Auth } = {}): BrokerRequest {
  return { url, auth, body, contentType: BROKER_CONTENT_TYPE, signing: { id: randomUUID(), secrets: [SECRET] } };
}

const toQueue = (queue: string, port = RABBITMQ_PORT) => `amqp://127.0.0.1:${port}/?routing_key=${queue}`;
const confirmed = { error: null, permanent: false };
const outcome = ({ error, permanent }: { error: string | null; permanent: boolean }) => ({ error, permanent });

describe('broker publisher: AMQP', () => {
  it('publishes the exact bytes, persistent, with the content type, message id and verifiable webhook headers', async (t) => {
    const rabbit = await rabbitmq(t);
    const queue = await rabbit.queue();
    // Spacing, key order and escapes of the producer's own writing: nothing is re-serialized.
    const body = '{ "specversion" : "1.0", "id":"e\\u00e9", "data": {"b":1,"a":[1.0, 2e3]} }';
    const sent = request(toQueue(queue.name), { body });
    assert.deepEqual(outcome(await publisher(t).publish(sent)), confirmed);
    await queue.received(1);
    const [message] = queue.messages;
    assert.equal(message!.content.toString('utf8'), body);
    assert.ok(message!.content.equals(Buffer.from(body, 'utf8')), 'byte for byte');
    const { properties } = message!;
    assert.equal(properties.contentType, 'application/cloudevents+json; charset=utf-8');
    assert.equal(properties.deliveryMode, 2, 'persistent');
    assert.equal(properties.messageId, sent.signing.id);
    const headers = properties.headers as Record<string, string>;
    assert.equal(headers['webhook-id'], sent.signing.id);
    assert.doesNotThrow(() => new Webhook(SECRET).verify(message!.content.toString('utf8'), headers));
    assert.throws(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(body, headers), 'another secret does not verify');
  });

  it('publishes to an exchange with the routing key of the URL', async (t) => {
    const rabbit = await rabbitmq(t);
    const queue = await rabbit.queue();
    const exchange = await rabbit.exchange('topic', { queue, routingKey: 'files.*.#' });
    const url = `amqp://127.0.0.1/?exchange=${exchange}&routing_key=files.new.a%23b`;
    assert.deepEqual(outcome(await publisher(t).publish(request(url))), confirmed);
    await queue.received(1);
    assert.equal(queue.messages[0]!.fields.exchange, exchange);
    assert.equal(queue.messages[0]!.fields.routingKey, 'files.new.a#b');
  });

  it('a wrong password is refused for good, naming what the broker said; guest logs in without auth on loopback', async (t) => {
    const rabbit = await rabbitmq(t);
    const queue = await rabbit.queue();
    const client = publisher(t);
    const wrong = await client.publish(
      request(toQueue(queue.name), { auth: { type: 'basic', basic: { username: 'guest', password: 'not-the-password' } } }),
    );
    assert.equal(wrong.permanent, true);
    assert.match(wrong.error!, /^the broker refused the connection: ACCESS_REFUSED - Login was refused/);
    assert.doesNotMatch(wrong.error!, /not-the-password/);
    const right = await client.publish(
      request(toQueue(queue.name), { auth: { type: 'basic', basic: { username: 'guest', password: 'guest' } } }),
    );
    assert.deepEqual(outcome(right), confirmed);
    assert.deepEqual(outcome(await client.publish(request(toQueue(queue.name)))), confirmed);
    await queue.received(2);
  });

  it('a missing exchange is refused for good and named; publishes to others meanwhile are confirmed', async (t) => {
    const rabbit = await rabbitmq(t);
    const queue = await rabbit.queue();
    const missing = rabbit.unusedName();
    const client = publisher(t);
    const [refused, ...others] = await Promise.all([
      client.publish(request(`amqp://127.0.0.1/?exchange=${missing}&routing_key=k`)),
      ...Array.from({ length: 5 }, () => client.publish(request(toQueue(queue.name)))),
    ]);
    assert.equal(refused!.permanent, true);
    assert.equal(
      refused!.error,
      `the broker refused to publish to exchange "${missing}": NOT_FOUND - no exchange '${missing}' in vhost '/'`,
    );
    for (const other of others) assert.deepEqual(outcome(other), confirmed);
    await queue.received(5);
  });

  it('a message no queue takes (unroutable) is refused for good, naming the queue or the exchange and key', async (t) => {
    const rabbit = await rabbitmq(t);
    const queue = await rabbit.queue();
    const exchange = await rabbit.exchange('direct', { queue, routingKey: 'bound' });
    const client = publisher(t);
    const noQueue = rabbit.unusedName();
    assert.deepEqual(outcome(await client.publish(request(toQueue(noQueue)))), {
      error: `the broker could not route the message: no queue is named "${noQueue}" (the default exchange routes by queue name) (312 NO_ROUTE)`,
      permanent: true,
    });
    assert.deepEqual(outcome(await client.publish(request(`amqp://127.0.0.1/?exchange=${exchange}&routing_key=other`))), {
      error: `the broker could not route the message: exchange "${exchange}" has no queue bound for routing key "other" (312 NO_ROUTE)`,
      permanent: true,
    });
    assert.deepEqual(outcome(await client.publish(request(`amqp://127.0.0.1/?exchange=${exchange}&routing_key=bound`))), confirmed);
    await queue.received(1);
  });

  it('a virtual host the broker does not have is refused for good, named', async (t) => {
    const vhost = `nothing-${randomBytes(4).toString('hex')}`;
    const answer = await publisher(t).publish(request(`amqp://127.0.0.1/${vhost}?routing_key=q`));
    assert.deepEqual(outcome(answer), {
      error: `the broker refused to open virtual host "${vhost}": it has none of that name, or the user may not use it`,
      permanent: true,
    });
  });

  it('a URL or credentials that cannot be used are permanent failures, without a connection', async (t) => {
    const client = publisher(t);
    assert.deepEqual(outcome(await client.publish(request('amqp://127.0.0.1/'))), {
      error:
        'target URL is not usable: routing_key is required without an exchange: the default exchange routes it to the queue of that name',
      permanent: true,
    });
    const header = { type: 'header', header: { type: 'Bearer', credentials: 't' } } as const;
    assert.deepEqual(outcome(await client.publish(request('amqp://127.0.0.1/?routing_key=q', { auth: header }))), {
      error: 'not sent: auth of type "header" cannot be used with amqp: only basic (user name and password)',
      permanent: true,
    });
  });

  it('nothing listening: later (connection refused), never permanent', async (t) => {
    const port = await freePort();
    assert.deepEqual(outcome(await publisher(t).publish(request(toQueue('q', port)))), { error: 'connection refused', permanent: false });
  });

  it('a broker that accepts the connection and never speaks: later, within the time-out', async (t) => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const port = (silent.address() as { port: number }).port;
    const answer = await publisher(t, { timeoutMs: 300 }).publish(request(toQueue('q', port)));
    assert.deepEqual(outcome(answer), { error: `time-out after 300 ms connecting to amqp://127.0.0.1:${port}`, permanent: false });
    assert.ok(answer.durationMs < 1_000, `${answer.durationMs} ms`);
  });

  it('an address the guard denies is refused for good, without a connection', async (t) => {
    const proxy = await startTcpProxy(RABBITMQ_PORT);
    t.after(() => proxy.close());
    const client = publisher(t, { deny: ['127.0.0.0/8'] });
    for (const host of ['127.0.0.1', 'localhost']) {
      const answer = await client.publish(request(`amqp://${host}:${proxy.port}/?routing_key=q`));
      assert.equal(answer.permanent, true, host);
      assert.match(answer.error!, /127\.0\.0\.1 is denied by NOTIFICATIONS_TARGET_DENY/);
    }
    assert.equal(proxy.accepted(), 0);
  });

  it('keeps one connection per broker and credentials, and opens a new one after it is cut; nothing confirmed is lost', async (t) => {
    const rabbit = await rabbitmq(t);
    const queue = await rabbit.queue();
    const proxy = await startTcpProxy(RABBITMQ_PORT);
    t.after(() => proxy.close());
    const client = publisher(t);
    const url = toQueue(queue.name, proxy.port);
    const first = await Promise.all(Array.from({ length: 20 }, () => client.publish(request(url))));
    for (const answer of first) assert.deepEqual(outcome(answer), confirmed);
    assert.equal(proxy.accepted(), 1, 'twenty publishes, one connection');

    proxy.cut();
    const answers = [];
    for (let i = 0; i < 20; i++) answers.push(await client.publish(request(url)));
    // The cut may be noticed by the first publish after it (later); then the connection is opened again.
    const failed = answers.filter((a) => a.error !== null);
    assert.ok(failed.length <= 1, JSON.stringify(failed));
    for (const answer of failed) assert.equal(answer.permanent, false);
    assert.equal(proxy.accepted(), 2, 'one new connection after the cut');
    await queue.received(40 - failed.length);

    const other = await client.publish(request(url, { auth: { type: 'basic', basic: { username: 'guest', password: 'guest' } } }));
    assert.deepEqual(outcome(other), confirmed);
    assert.equal(proxy.accepted(), 3, 'other credentials, another connection');
  });

  it('a broker that is down, then back: later while down, confirmed once it is back', async (t) => {
    const rabbit = await rabbitmq(t);
    const queue = await rabbit.queue();
    const proxy = await startTcpProxy(RABBITMQ_PORT);
    t.after(() => proxy.close());
    const client = publisher(t);
    const url = toQueue(queue.name, proxy.port);
    assert.deepEqual(outcome(await client.publish(request(url))), confirmed);
    await proxy.stop();
    const down = [await client.publish(request(url)), await client.publish(request(url))];
    for (const answer of down) assert.equal(answer.permanent, false);
    assert.deepEqual(outcome(down[1]!), { error: 'connection refused', permanent: false });
    await proxy.start();
    assert.deepEqual(outcome(await client.publish(request(url))), confirmed);
    await queue.received(2);
  });
});
