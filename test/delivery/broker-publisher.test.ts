/**
 * Publishing to the real RabbitMQ on 127.0.0.1:5672, consumed with a real consumer: what each
 * message carries, what the broker's refusals come to, and the connections: kept, reused, opened
 * again after they are cut, and never made to an address the guard refuses. A TCP proxy in front
 * of the broker stands for a broker that goes away; the broker itself is never touched.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { confirmed, connectionTests, outcome, type Protocol, publisher, request, SECRET } from '../support/broker-publisher-tests.js';
import { RABBITMQ_PORT, RABBITMQ_SKIP, rabbitmq } from '../support/rabbitmq.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const toQueue = (queue: string, port = RABBITMQ_PORT) => `amqp://127.0.0.1:${port}/?routing_key=${queue}`;
const AMQP: Protocol = {
  peer: 'broker',
  kept: 'confirmed',
  port: RABBITMQ_PORT,
  skip: RABBITMQ_SKIP,
  url: (port) => toQueue('q', port),
  destination: async (t, proxyPort) => {
    const queue = await (await rabbitmq(t)).queue();
    return { url: toQueue(queue.name, proxyPort), received: async (count) => (await queue.received(count), queue.messages.length) };
  },
  otherAuth: async () => ({ type: 'basic', basic: { username: 'guest', password: 'guest' } }),
};

describe('broker publisher: AMQP', () => {
  it(
    'publishes the exact bytes, persistent, with the content type, message id and verifiable webhook headers',
    { skip: RABBITMQ_SKIP },
    async (t) => {
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
      assert.throws(
        () => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(body, headers),
        'another secret does not verify',
      );
    },
  );

  it('publishes to an exchange with the routing key of the URL', { skip: RABBITMQ_SKIP }, async (t) => {
    const rabbit = await rabbitmq(t);
    const queue = await rabbit.queue();
    const exchange = await rabbit.exchange('topic', { queue, routingKey: 'files.*.#' });
    const url = `amqp://127.0.0.1/?exchange=${exchange}&routing_key=files.new.a%23b`;
    assert.deepEqual(outcome(await publisher(t).publish(request(url))), confirmed);
    await queue.received(1);
    assert.equal(queue.messages[0]!.fields.exchange, exchange);
    assert.equal(queue.messages[0]!.fields.routingKey, 'files.new.a#b');
  });

  it(
    'a wrong password is refused for good, naming what the broker said; guest logs in without auth on loopback',
    { skip: RABBITMQ_SKIP },
    async (t) => {
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
    },
  );

  it(
    'a missing exchange is refused for good and named; publishes to others meanwhile are confirmed',
    { skip: RABBITMQ_SKIP },
    async (t) => {
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
    },
  );

  it(
    'a message no queue takes (unroutable) is refused for good, naming the queue or the exchange and key',
    { skip: RABBITMQ_SKIP },
    async (t) => {
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
    },
  );

  it('a virtual host the broker does not have is refused for good, named', { skip: RABBITMQ_SKIP }, async (t) => {
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

  connectionTests(AMQP);

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
});
