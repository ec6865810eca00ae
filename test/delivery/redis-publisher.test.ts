/**
 * Publishing to the real Redis on 127.0.0.1:6379, read back with XRANGE: what each entry
 * carries, what Redis's refusals come to, and the connections: kept, reused, opened again after
 * they are cut. A TCP proxy in front of Redis stands for one that goes away; Redis itself is
 * never touched.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { confirmed, connectionTests, outcome, type Protocol, publisher, request, SECRET } from '../support/broker-publisher-tests.js';
import { REDIS_PORT, REDIS_SKIP, testRedis } from '../support/redis.js';

const toStream = (key: string, port = REDIS_PORT) => `redis://127.0.0.1:${port}/${encodeURIComponent(key)}`;
const REDIS: Protocol = {
  peer: 'server',
  kept: 'added',
  port: REDIS_PORT,
  skip: REDIS_SKIP,
  url: (port) => toStream('k', port),
  destination: async (t, proxyPort) => {
    const stream = (await testRedis(t)).stream();
    return { url: toStream(stream.key, proxyPort), received: async (count) => (await stream.received(count)).length };
  },
  otherAuth: async (t) => {
    const password = randomBytes(12).toString('hex');
    return { type: 'basic', basic: { username: await (await testRedis(t)).user(password), password } };
  },
  once: true,
};

describe('broker publisher: Redis Streams', () => {
  it(
    'adds the exact bytes as field cloudevent, with the content type and verifiable webhook headers as fields',
    { skip: REDIS_SKIP },
    async (t) => {
      const redis = await testRedis(t);
      const stream = redis.stream();
      const body = '{ "specversion" : "1.0", "id":"e\\u00e9", "data": {"b":1,"a":[1.0, 2e3], "s":"é🎉"} }';
      const sent = request(toStream(stream.key), { body });
      assert.deepEqual(outcome(await publisher(t).publish(sent)), confirmed);
      const [entry] = await stream.received(1);
      assert.deepEqual(
        entry!.fields.map(([name]) => name),
        ['cloudevent', 'content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'],
      );
      assert.ok(entry!.fields[0]![1].equals(Buffer.from(body, 'utf8')), 'byte for byte');
      assert.equal(entry!.field('content-type'), 'application/cloudevents+json; charset=utf-8');
      assert.equal(entry!.field('webhook-id'), sent.signing.id);
      const headers = Object.fromEntries(entry!.fields.slice(2).map(([name, value]) => [name, value.toString('utf8')]));
      assert.doesNotThrow(() => new Webhook(SECRET).verify(entry!.field('cloudevent')!, headers));
      assert.throws(
        () => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(body, headers),
        'another secret does not verify',
      );
    },
  );

  it('reads the key percent-decoded: a slash, a colon, a space, a non-ASCII letter', { skip: REDIS_SKIP }, async (t) => {
    const redis = await testRedis(t);
    const stream = redis.stream('/a:b cé');
    assert.ok(toStream(stream.key).endsWith('%2Fa%3Ab%20c%C3%A9'));
    assert.deepEqual(outcome(await publisher(t).publish(request(toStream(stream.key)))), confirmed);
    await stream.received(1);
  });

  it(
    'a key holding another type is refused for good, naming the key; other keys meanwhile are added to',
    { skip: REDIS_SKIP },
    async (t) => {
      const redis = await testRedis(t);
      const stream = redis.stream();
      const wrong = await redis.stringKey();
      const client = publisher(t);
      const [refused, ...others] = await Promise.all([
        client.publish(request(toStream(wrong))),
        ...Array.from({ length: 5 }, () => client.publish(request(toStream(stream.key)))),
      ]);
      assert.deepEqual(outcome(refused!), {
        error: `Redis refused to add to stream "${wrong}": WRONGTYPE Operation against a key holding the wrong kind of value`,
        permanent: true,
      });
      for (const other of others) assert.deepEqual(outcome(other), confirmed);
      await stream.received(5);
    },
  );

  it(
    'logs in with auth basic as an ACL user; a wrong password is refused for good; no auth is the default user',
    { skip: REDIS_SKIP },
    async (t) => {
      const redis = await testRedis(t);
      const stream = redis.stream();
      const password = randomBytes(12).toString('hex');
      const user = await redis.user(password);
      const client = publisher(t);
      const wrong = await client.publish(
        request(toStream(stream.key), { auth: { type: 'basic', basic: { username: user, password: 'not-it' } } }),
      );
      assert.deepEqual(outcome(wrong), {
        error: 'Redis refused the login: WRONGPASS invalid username-password pair or user is disabled.',
        permanent: true,
      });
      const right = await client.publish(request(toStream(stream.key), { auth: { type: 'basic', basic: { username: user, password } } }));
      assert.deepEqual(outcome(right), confirmed);
      assert.deepEqual(outcome(await client.publish(request(toStream(stream.key)))), confirmed);
      await stream.received(2);
    },
  );

  it('a key the ACL user may not write is refused for good (NOPERM), naming the key', { skip: REDIS_SKIP }, async (t) => {
    const redis = await testRedis(t);
    const password = randomBytes(12).toString('hex');
    const user = await redis.user(password, 'only-these-*');
    const stream = redis.stream();
    const answer = await publisher(t).publish(
      request(toStream(stream.key), { auth: { type: 'basic', basic: { username: user, password } } }),
    );
    assert.equal(answer.permanent, true);
    assert.match(answer.error!, new RegExp(`^Redis refused to add to stream "${stream.key}": NOPERM`));
  });

  it('a URL or credentials that cannot be used are permanent failures, without a connection', async (t) => {
    const client = publisher(t);
    assert.deepEqual(outcome(await client.publish(request('redis://127.0.0.1/'))), {
      error: 'target URL is not usable: names no stream key: write it as redis://host[:port]/KEY',
      permanent: true,
    });
    const header = { type: 'header', header: { type: 'Bearer', credentials: 't' } } as const;
    assert.deepEqual(outcome(await client.publish(request('redis://127.0.0.1/k', { auth: header }))), {
      error: 'not sent: auth of type "header" cannot be used with redis: only basic (user name and password)',
      permanent: true,
    });
  });

  connectionTests(REDIS);
});
