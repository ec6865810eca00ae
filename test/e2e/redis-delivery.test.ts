/**
 * Redis Streams destinations end to end: the server as a process, the shared Redis on
 * 127.0.0.1:6379 (read back with XRANGE, through a TCP proxy where the test cuts or stops it),
 * HTTP targets beside it, on every database. Redis itself is never stopped or restarted.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { brokerScene, event, exactBody, itReconnectsAfterCuts, itSurvivesTheBrokerDown } from '../support/broker-e2e.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { REDIS_PORT, REDIS_SKIP, testRedis } from '../support/redis.js';

for (const backend of testBackends()) {
  describeOn(backend, `broker destinations: Redis Streams (${backend.name})`, () => {
    const scene = brokerScene(backend);
    const { subscribe, record, send, stub } = scene;

    it(
      'adds each event as sent: exact bytes, content type, signed with the subscription secret, as HTTP gets it; with credentials',
      { skip: REDIS_SKIP },
      async (t: TestContext) => {
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
        const body = exactBody(source);
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

        const history = await scene.delivered(first.uuid);
        assert.equal(history[0]!.target, null);
        assert.equal(entry!.field('webhook-id'), history[0]!.elm);
        assert.deepEqual(
          history[0]!.attempts.map(({ status, error }) => ({ status, error })),
          [{ status: null, error: null }],
        );
      },
    );

    it(
      'a key holding another type fails at once and disables the subscription, naming the key',
      { skip: REDIS_SKIP },
      async (t: TestContext) => {
        const redis = await testRedis(t);
        const key = await redis.stringKey();
        const subscription = await subscribe(`redis://127.0.0.1/${key}`, '/wrongtype');
        await send(event('/wrongtype', 'w1'));
        await eventually(async () => (await record(subscription.uuid)).disabled !== null, 'disabled');
        assert.equal(
          (await record(subscription.uuid)).error,
          `Redis refused to add to stream "${key}": WRONGTYPE Operation against a key holding the wrong kind of value`,
        );
      },
    );

    itReconnectsAfterCuts(
      scene,
      REDIS_PORT,
      async (t, proxyPort) => {
        const stream = (await testRedis(t)).stream();
        return {
          url: `redis://127.0.0.1:${proxyPort}/${stream.key}`,
          received: async (count, timeoutMs) => (await stream.received(count, timeoutMs)).map((e) => e.field('cloudevent')!),
        };
      },
      { skip: REDIS_SKIP },
    );

    itSurvivesTheBrokerDown(scene, 'Redis', (port) => `redis://127.0.0.1:${port}/k`);
  });
}
