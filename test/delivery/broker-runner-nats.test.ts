/**
 * The delivery runner with NATS JetStream destinations, as broker-runner.test.ts does it for
 * AMQP: over a real database, the real NATS server (through a TCP proxy the test can stop) and a
 * real HTTP target, driven a round at a time: a server that cannot be reached is a lane that goes
 * down and is probed while HTTP targets are served, a stream's acknowledgement brings it back,
 * and a subject no stream holds disables the subscription, naming the subject.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it, type TestContext } from 'node:test';
import { type DatabaseHandle } from '../../src/db/connect.js';
import { logEvent, pendingMatch } from '../../src/db/events.js';
import { insertSubscription } from '../../src/db/subscriptions.js';
import type { MatchesTable, SubscriptionRow } from '../../src/db/tables.js';
import { type BrokerClient, createBrokerPublisher } from '../../src/delivery/broker-publisher.js';
import { DOWN_AFTER } from '../../src/delivery/origin-health.js';
import { createTargetClient, type TargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { describeOn, openTestDatabase, type TestBackend, testBackends } from '../support/database.js';
import { startStub } from '../support/http-stub.js';
import { NATS_PORT, natsStream } from '../support/nats.js';
import { round, testDeliveryRunner } from '../support/runners.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

const NOW = 1_800_000_000_000_000;
const SCHEDULE = { delaysMs: [60_000, 60_000], random: () => 0.5 };

interface Scene {
  handle: DatabaseHandle;
  target: TargetClient;
  broker: BrokerClient;
  /** NATS, through a proxy the test can stop and start. */
  proxy: TcpProxy;
  now: number;
  clock: () => number;
  subscribe(targetUrl: string, fields?: Partial<SubscriptionRow>): Promise<SubscriptionRow>;
  queue(subscription: SubscriptionRow, count: number): Promise<MatchesTable[]>;
  read(uuid: string): Promise<MatchesTable>;
  subscription(uuid: string): Promise<SubscriptionRow>;
  attempts(uuid: string): Promise<Array<{ status: number | null; error: string | null }>>;
}

async function scene(t: TestContext, backend: TestBackend): Promise<Scene> {
  const db = await openTestDatabase(backend);
  const guard = addressGuard({ allow: [], deny: [] });
  const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard });
  const broker = createBrokerPublisher({ timeoutMs: 2_000, guard });
  const proxy = await startTcpProxy(NATS_PORT);
  t.after(async () => {
    await Promise.all([target.close(), broker.close(), proxy.close()]);
    await db.close();
  });
  let events = 0;
  const s: Scene = {
    handle: db.handle,
    target,
    broker,
    proxy,
    now: NOW,
    clock: () => s.now,
    subscribe: async (targetUrl, fields = {}) => {
      const row = subscriptionRow({ target_url: targetUrl, ...fields });
      await insertSubscription(db.handle.db, db.handle.capabilities, row);
      return row;
    },
    queue: async (subscription, count) => {
      const rows: MatchesTable[] = [];
      for (let i = 0; i < count; i++) {
        const eventUuid = randomUUID();
        const id = `e${++events}`;
        const match = { ...pendingMatch(eventUuid, subscription, NOW - 1_000_000 + events), state: 'deliver' as const };
        const body = JSON.stringify({ specversion: '1.0', id, source: '/t', type: 't' });
        await logEvent(db.handle.db, { uuid: eventUuid, source: '/t', event_id: id, type: 't', spec_version: '1.0', body, received: 1 }, [
          match,
        ]);
        rows.push(match);
      }
      return rows;
    },
    read: (uuid) => db.handle.db.selectFrom('matches').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow(),
    subscription: (uuid) => db.handle.db.selectFrom('subscriptions').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow(),
    attempts: (uuid) =>
      db.handle.db.selectFrom('attempts').select(['status', 'error']).where('match_uuid', '=', uuid).orderBy('at').execute(),
  };
  return s;
}

const states = async (s: Scene, rows: readonly MatchesTable[]) => (await Promise.all(rows.map((r) => s.read(r.uuid)))).map((r) => r.state);
const count = (values: readonly string[], value: string) => values.filter((v) => v === value).length;

for (const backend of testBackends()) {
  describeOn(backend, `delivery runner, NATS destinations (${backend.name})`, () => {
    it("delivers on the stream's acknowledgement: no HTTP status recorded, the messages in the stream", async (t) => {
      const s = await scene(t, backend);
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

    it('a server that cannot be reached: its lane is down and probed, an HTTP target is served; back up, the rows are delivered', async (t) => {
      const s = await scene(t, backend);
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
    });

    it('a subject no stream holds fails at once and disables the subscription, naming the subject', async (t) => {
      const s = await scene(t, backend);
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
