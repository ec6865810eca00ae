/**
 * The delivery runner with broker destinations, as the server wires it (HTTP targets and broker
 * URLs side by side), over a real database, the real RabbitMQ (through a TCP proxy the test can
 * stop) and a real HTTP target, driven a round at a time with the clock in the test's hand: a
 * broker that cannot be reached is a lane that goes down and is probed as an HTTP origin is,
 * while HTTP targets are served; its confirmation, an answer without an HTTP status, brings the
 * lane back; its refusals and the end of the schedule disable the subscription, saying why.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { DOWN_AFTER } from '../../src/delivery/origin-health.js';
import { describeOn, testBackends } from '../support/database.js';
import { startStub } from '../support/http-stub.js';
import { RABBITMQ_PORT, RABBITMQ_SKIP, rabbitmq } from '../support/rabbitmq.js';
import { REDIS_PORT, REDIS_SKIP, testRedis } from '../support/redis.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { count, SCHEDULE, scene, states } from '../support/broker-runner-scene.js';
import { round, testDeliveryRunner } from '../support/runners.js';

for (const backend of testBackends()) {
  describeOn(backend, `delivery runner, broker destinations (${backend.name})`, () => {
    it(
      'delivers to RabbitMQ on its confirmation: no HTTP status recorded, the message in the queue',
      { skip: RABBITMQ_SKIP },
      async (t) => {
        const s = await scene(t, backend, RABBITMQ_PORT);
        const rabbit = await rabbitmq(t);
        const queue = await rabbit.queue();
        const rows = await s.queue(await s.subscribe(`amqp://127.0.0.1:${RABBITMQ_PORT}/?routing_key=${queue.name}`), 3);
        const runner = testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, broker: s.broker });
        assert.equal(await round(runner), 3);
        assert.deepEqual(await states(s, rows), ['delivered', 'delivered', 'delivered']);
        assert.equal((await s.read(rows[0]!.uuid)).target_code, null);
        assert.deepEqual(await s.attempts(rows[0]!.uuid), [{ status: null, error: null }]);
        await queue.received(3);
        assert.deepEqual(
          queue.messages.map((m) => m.properties.messageId as string),
          rows.map((r) => r.uuid),
        );
      },
    );

    it('a broker that cannot be reached: its lane is down and probed once a second, while an HTTP target is served', async (t) => {
      const s = await scene(t, backend, RABBITMQ_PORT);
      const stub = await startStub();
      t.after(() => stub.close());
      await s.proxy.stop();
      const lane = `amqp://127.0.0.1:${s.proxy.port}`;
      const brokerRows = await s.queue(await s.subscribe(`${lane}/?routing_key=q`), 30);
      const httpRows = await s.queue(await s.subscribe(stub.url), 5);
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock },
        { target: s.target, broker: s.broker, connectionsPerOrigin: 4, schedule: SCHEDULE },
      );
      const tried = async () => (await Promise.all(brokerRows.map((r) => s.attempts(r.uuid)))).flat().length;

      await round(runner);
      assert.deepEqual(await states(s, httpRows), ['delivered', 'delivered', 'delivered', 'delivered', 'delivered'], 'HTTP unaffected');
      assert.deepEqual(runner.downOrigins(), [lane]);
      const first = 4 + DOWN_AFTER - 1;
      assert.equal(await tried(), first);
      const attempt = (await Promise.all(brokerRows.map((r) => s.attempts(r.uuid)))).flat()[0];
      assert.deepEqual(attempt, { status: null, error: 'connection refused' });
      await round(runner);
      assert.equal(await tried(), first, 'down: nothing more within the second');
      for (let second = 1; second <= 3; second++) {
        s.now += 1_000_000;
        await round(runner);
        await round(runner);
        assert.equal(await tried(), first + second, `one probe in second ${second}`);
      }
      const waiting = await states(s, brokerRows);
      assert.equal(count(waiting, 'deliver'), 30, 'none lost, none failed: due again on the schedule or waiting untried');
    });

    it(
      'a down broker that confirms a probe is up again (a confirmation is an answer): its waiting rows are delivered',
      { skip: RABBITMQ_SKIP },
      async (t) => {
        const s = await scene(t, backend, RABBITMQ_PORT);
        const rabbit = await rabbitmq(t);
        const queue = await rabbit.queue();
        await s.proxy.stop();
        const lane = `amqp://127.0.0.1:${s.proxy.port}`;
        const rows = await s.queue(await s.subscribe(`${lane}/?routing_key=${queue.name}`), 16);
        const runner = testDeliveryRunner(
          { handle: s.handle, clock: s.clock },
          { target: s.target, broker: s.broker, connectionsPerOrigin: 4, schedule: SCHEDULE },
        );
        await round(runner);
        assert.deepEqual(runner.downOrigins(), [lane]);
        await s.proxy.start();
        s.now += 1_000_000;
        await round(runner);
        assert.deepEqual(runner.downOrigins(), [], 'the probe was confirmed');
        for (let i = 0; i < 4; i++) await round(runner);
        const tried = 4 + DOWN_AFTER - 1;
        assert.equal(count(await states(s, rows), 'delivered'), 16 - tried, 'the probe, then the rows that waited untried');
        await queue.received(16 - tried);
      },
    );

    it('the end of the schedule fails the row and disables the subscription, saying why', async (t) => {
      const s = await scene(t, backend, RABBITMQ_PORT);
      await s.proxy.stop();
      const subscription = await s.subscribe(`amqp://127.0.0.1:${s.proxy.port}/?routing_key=q`);
      const [row] = await s.queue(subscription, 1);
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock },
        { target: s.target, broker: s.broker, schedule: { delaysMs: [1_000], random: () => 0.5 } },
      );
      await round(runner);
      assert.equal((await s.read(row!.uuid)).state, 'deliver');
      s.now += 2_000_000;
      await round(runner);
      assert.equal((await s.read(row!.uuid)).state, 'failed');
      const stored = await s.subscription(subscription.uuid);
      assert.notEqual(stored.disabled, null);
      assert.equal(stored.error, 'gave up after 2 attempts: connection refused');
    });

    it(
      "the broker's refusal (a wrong password) fails at once and disables the subscription, naming the reason",
      { skip: RABBITMQ_SKIP },
      async (t) => {
        const s = await scene(t, backend, RABBITMQ_PORT);
        const wrong = JSON.stringify({ type: 'basic', basic: { username: 'guest', password: 'wrong' } });
        const subscription = await s.subscribe(`amqp://127.0.0.1:${RABBITMQ_PORT}/?routing_key=q`, { auth: wrong });
        const [row] = await s.queue(subscription, 1);
        await round(testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, broker: s.broker }));
        assert.equal((await s.read(row!.uuid)).state, 'failed');
        const stored = await s.subscription(subscription.uuid);
        assert.notEqual(stored.disabled, null);
        assert.match(stored.error ?? '', /^the broker refused the connection: ACCESS_REFUSED - Login was refused/);
      },
    );

    it(
      'delivers to a Redis stream on its entry id; a Redis that cannot be reached is a lane down, served again once back',
      { skip: REDIS_SKIP },
      async (t) => {
        const s = await scene(t, backend, RABBITMQ_PORT);
        const redis = await testRedis(t);
        const stream = redis.stream();
        const proxy = await startTcpProxy(REDIS_PORT);
        t.after(() => proxy.close());
        const stub = await startStub();
        t.after(() => stub.close());
        const lane = `redis://127.0.0.1:${proxy.port}`;
        const subscription = await s.subscribe(`${lane}/${stream.key}`);
        const runner = testDeliveryRunner(
          { handle: s.handle, clock: s.clock },
          { target: s.target, broker: s.broker, connectionsPerOrigin: 4, schedule: SCHEDULE },
        );
        const first = await s.queue(subscription, 3);
        assert.equal(await round(runner), 3);
        assert.deepEqual(await states(s, first), ['delivered', 'delivered', 'delivered']);
        assert.deepEqual(await s.attempts(first[0]!.uuid), [{ status: null, error: null }]);
        assert.deepEqual(
          (await stream.received(3)).map((entry) => entry.field('webhook-id')),
          first.map((r) => r.uuid),
        );

        await proxy.stop();
        const waiting = await s.queue(subscription, 16);
        const httpRows = await s.queue(await s.subscribe(stub.url), 5);
        await round(runner);
        assert.deepEqual(await states(s, httpRows), ['delivered', 'delivered', 'delivered', 'delivered', 'delivered'], 'HTTP unaffected');
        assert.deepEqual(runner.downOrigins(), [lane]);
        const attempt = (await Promise.all(waiting.map((r) => s.attempts(r.uuid)))).flat()[0];
        assert.deepEqual(attempt, { status: null, error: 'connection refused' });
        assert.equal(count(await states(s, waiting), 'deliver'), 16, 'none lost, none failed');

        await proxy.start();
        s.now += 1_000_000;
        await round(runner);
        assert.deepEqual(runner.downOrigins(), [], 'the probe was added');
        for (let i = 0; i < 4; i++) await round(runner);
        // Rows refused while it was down are due again on the schedule; every other one is delivered.
        const refused = (await Promise.all(waiting.map(async (r) => (await s.attempts(r.uuid)).some((a) => a.error !== null)))).filter(
          Boolean,
        );
        assert.ok(refused.length >= DOWN_AFTER, `${refused.length} refused while down`);
        const delivered = count(await states(s, waiting), 'delivered');
        assert.equal(delivered, 16 - refused.length, 'the probe, then the rows that waited untried');
        assert.equal((await stream.received(3 + delivered)).length, 3 + delivered);
      },
    );

    it(
      'a key of another type than a stream fails at once and disables the subscription, naming the key',
      { skip: REDIS_SKIP },
      async (t) => {
        const s = await scene(t, backend, RABBITMQ_PORT);
        const redis = await testRedis(t);
        const key = await redis.stringKey();
        const subscription = await s.subscribe(`redis://127.0.0.1:${REDIS_PORT}/${key}`);
        const [row] = await s.queue(subscription, 1);
        await round(testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, broker: s.broker }));
        assert.equal((await s.read(row!.uuid)).state, 'failed');
        const stored = await s.subscription(subscription.uuid);
        assert.notEqual(stored.disabled, null);
        assert.equal(
          stored.error,
          `Redis refused to add to stream "${key}": WRONGTYPE Operation against a key holding the wrong kind of value`,
        );
      },
    );
  });
}
