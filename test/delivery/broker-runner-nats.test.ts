/**
 * The delivery runner with NATS JetStream destinations, as broker-runner.test.ts does it for
 * AMQP: over a real database, the real NATS server (through a TCP proxy the test can stop) and a
 * real HTTP target, driven a round at a time: a server that cannot be reached is a lane that goes
 * down and is probed while HTTP targets are served, a stream's acknowledgement brings it back,
 * and a subject no stream holds disables the subscription, naming the subject.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { DOWN_AFTER } from '../../src/delivery/origin-health.js';
import { describeOn, testBackends } from '../support/database.js';
import { startStub } from '../support/http-stub.js';
import { NATS_PORT, NATS_SKIP, natsStream } from '../support/nats.js';
import { count, SCHEDULE, scene, states } from '../support/broker-runner-scene.js';
import { round, testDeliveryRunner } from '../support/runners.js';

for (const backend of testBackends()) {
  describeOn(backend, `delivery runner, NATS destinations (${backend.name})`, () => {
    it("delivers on the stream's acknowledgement: no HTTP status recorded, the messages in the stream", { skip: NATS_SKIP }, async (t) => {
      const s = await scene(t, backend, NATS_PORT);
      const stream = await natsStream(t);
      const rows = await s.queue(await s.subscribe(`nats://127.0.0.1:${NATS_PORT}/${stream.subject()}`), 3);
      const runner = testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, broker: s.broker });
      assert.equal(await round(runner), 3);
      assert.deepEqual(await states(s, rows), ['delivered', 'delivered', 'delivered']);
      assert.deepEqual(await s.attempts(rows[0]!.uuid), [{ status: null, error: null }]);
      const messages = await stream.received(3);
      assert.deepEqual(
        messages.map((m) => m.header.get('Nats-Msg-Id')),
        rows.map((r) => r.uuid),
      );
    });

    it(
      'a server that cannot be reached: its lane is down and probed, an HTTP target is served; back up, the rows are delivered',
      { skip: NATS_SKIP },
      async (t) => {
        const s = await scene(t, backend, NATS_PORT);
        const stream = await natsStream(t);
        const stub = await startStub();
        t.after(() => stub.close());
        await s.proxy.stop();
        const lane = `nats://127.0.0.1:${s.proxy.port}`;
        const rows = await s.queue(await s.subscribe(`${lane}/${stream.subject()}`), 16);
        const httpRows = await s.queue(await s.subscribe(stub.url), 5);
        const runner = testDeliveryRunner(
          { handle: s.handle, clock: s.clock },
          { target: s.target, broker: s.broker, connectionsPerOrigin: 4, schedule: SCHEDULE },
        );
        await round(runner);
        assert.equal(count(await states(s, httpRows), 'delivered'), 5, 'HTTP unaffected');
        assert.deepEqual(runner.downOrigins(), [lane]);
        const attempt = (await Promise.all(rows.map((r) => s.attempts(r.uuid)))).flat()[0];
        assert.deepEqual(attempt, { status: null, error: 'connection refused' });
        assert.equal(count(await states(s, rows), 'deliver'), 16, 'none failed');

        await s.proxy.start();
        s.now += 1_000_000;
        await round(runner);
        assert.deepEqual(runner.downOrigins(), [], 'the probe was acknowledged');
        for (let i = 0; i < 4; i++) await round(runner);
        const tried = 4 + DOWN_AFTER - 1;
        assert.equal(count(await states(s, rows), 'delivered'), 16 - tried, 'the probe, then the rows that waited untried');
        await stream.received(16 - tried);
      },
    );

    it('a subject no stream holds fails at once and disables the subscription, naming the subject', { skip: NATS_SKIP }, async (t) => {
      const s = await scene(t, backend, NATS_PORT);
      const stream = await natsStream(t);
      const unheld = stream.unheldSubject();
      const subscription = await s.subscribe(`nats://127.0.0.1:${NATS_PORT}/${unheld}`);
      const [row] = await s.queue(subscription, 1);
      await round(testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, broker: s.broker }));
      assert.equal((await s.read(row!.uuid)).state, 'failed');
      const stored = await s.subscription(subscription.uuid);
      assert.notEqual(stored.disabled, null);
      assert.equal(stored.error, `no stream holds subject "${unheld}" (no responders)`);
    });
  });
}
