/**
 * The delivery runner against a real database, the real target client and real HTTP servers
 * on 127.0.0.1, driven a round at a time with the clock in the test's hand: how each answer
 * settles its row and subscription, how one origin's trouble stays its own, and how rows that
 * cannot be sent in time go back to the queue untried.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { Keyring } from '../../src/config/keyring.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { logEvent, pendingMatch } from '../../src/db/stores/events.js';
import { type MatchQueue, matchQueue } from '../../src/db/stores/match-queue.js';
import { syncSchema } from '../../src/db/migrate.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchesTable, SubscriptionRow } from '../../src/db/tables.js';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';
import { DOWN_AFTER, KEEPING_UP_US } from '../../src/delivery/origin-health.js';
import { createTargetClient, type TargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { Handoff } from '../../src/runners/handoff.js';
import { sealSecret } from '../../src/subscriptions/secret-box.js';
import {
  createPostgres,
  describeOn,
  openTestDatabase,
  POSTGRES,
  POSTGRES_TEST_URL,
  type TestBackend,
  testBackends,
} from '../support/database.js';
import { startDatabaseProxy } from '../support/database-proxy.js';
import { eventually, type HttpStub, type StubAnswer, startStub } from '../support/http-stub.js';
import { freePort } from '../support/processes.js';
import { round, TEST_LEASE_US, testDeliveryRunner } from '../support/runners.js';
import { subscriptionRow } from '../support/subscription-row.js';

const NOW = 1_800_000_000_000_000;

interface Scene {
  handle: DatabaseHandle;
  target: TargetClient;
  /** The test's clock (µs): moved by hand. */
  now: number;
  clock: () => number;
  subscribe(targetUrl: string, fields?: Partial<SubscriptionRow>): Promise<SubscriptionRow>;
  /** A row waiting for delivery, due at `due`. */
  queue(subscription: SubscriptionRow, fields?: Partial<MatchesTable>): Promise<MatchesTable>;
  read(uuid: string): Promise<MatchesTable>;
  attempts(uuid: string): Promise<Array<{ status: number | null; error: string | null }>>;
  stub(answer?: StubAnswer): Promise<HttpStub>;
  /** A target that holds every request until `release` is called, then answers 200. */
  holdingStub(): Promise<{ stub: HttpStub; release: () => void }>;
}

/** `connections`: the sender's per origin, which the runner is told too. */
async function scene(t: TestContext, backend: TestBackend, { deny = [] as string[], connections = 4 } = {}): Promise<Scene> {
  const db = await openTestDatabase(backend);
  const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: connections, guard: addressGuard({ allow: [], deny }) });
  const stubs: HttpStub[] = [];
  t.after(async () => {
    await target.close();
    for (const stub of stubs) await stub.close();
    await db.close();
  });
  let events = 0;
  const s: Scene = {
    handle: db.handle,
    target,
    now: NOW,
    clock: () => s.now,
    subscribe: async (targetUrl, fields = {}) => {
      const row = subscriptionRow({ target_url: targetUrl, ...fields });
      await insertSubscription(db.handle.db, db.handle.capabilities, row);
      return row;
    },
    queue: async (subscription, fields = {}) => {
      const eventUuid = randomUUID();
      const id = `e${++events}`;
      const match = { ...pendingMatch(eventUuid, subscription, NOW - 1_000_000 + events), state: 'deliver' as const, ...fields };
      const body = JSON.stringify({ specversion: '1.0', id, source: '/t', type: 't' });
      await logEvent(db.handle.db, { uuid: eventUuid, source: '/t', event_id: id, type: 't', spec_version: '1.0', body, received: 1 }, [
        match,
      ]);
      return match;
    },
    read: (uuid) => db.handle.db.selectFrom('matches').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow(),
    attempts: (uuid) =>
      db.handle.db.selectFrom('attempts').select(['status', 'error']).where('match_uuid', '=', uuid).orderBy('at').execute(),
    stub: async (answer) => {
      const stub = await startStub(answer);
      stubs.push(stub);
      return stub;
    },
    holdingStub: async () => {
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      const stub = await s.stub(async (_request, response) => {
        await held;
        response.writeHead(200).end();
      });
      return { stub, release };
    },
  };
  return s;
}

const eventId = (body: string) => (JSON.parse(body) as { id: string }).id;

for (const backend of testBackends()) {
  describeOn(backend, `delivery runner (${backend.name})`, () => {
    it('a permanent failure disables the subscription and cancels its waiting rows; the rows already answered keep their outcome', async (t) => {
      const s = await scene(t, backend);
      const stub = await s.stub((request, response) => void response.writeHead(eventId(request.body) === 'e1' ? 400 : 200).end('no'));
      const subscription = await s.subscribe(stub.url);
      const rows = [await s.queue(subscription), await s.queue(subscription)];
      const changes: string[] = [];
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock },
        { target: s.target, onSubscriptionChange: (c) => changes.push(c.kind === 'upsert' ? c.row.uuid : c.uuid) },
      );
      assert.equal(await round(runner), 2);
      const [bad, good] = [await s.read(rows[0]!.uuid), await s.read(rows[1]!.uuid)];
      assert.deepEqual([bad.state, bad.target_code, bad.locked_by], ['failed', 400, null]);
      assert.deepEqual([good.state, good.target_code], ['delivered', 200]);
      const stored = await s.handle.db
        .selectFrom('subscriptions')
        .selectAll()
        .where('uuid', '=', subscription.uuid)
        .executeTakeFirstOrThrow();
      assert.notEqual(stored.disabled, null);
      assert.equal(stored.error, 'target answered 400 Bad Request: no');
      assert.deepEqual(changes, [subscription.uuid], 'the matcher hears of it');
    });

    it('a target in a denied range fails at once and disables the subscription, without a connection', async (t) => {
      const s = await scene(t, backend, { deny: ['127.0.0.0/8', '::1/128'] });
      const stub = await s.stub();
      const row = await s.queue(await s.subscribe(stub.url.replace('127.0.0.1', 'localhost')));
      assert.equal(await round(testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target })), 1);
      assert.equal(stub.requests.length, 0);
      const stored = await s.read(row.uuid);
      assert.deepEqual([stored.state, stored.target_code], ['failed', null]);
      assert.match((await s.attempts(row.uuid))[0]?.error ?? '', /denied by NOTIFICATIONS_TARGET_DENY/);
    });

    it("keeps the target's last HTTP status when a try gets none, and retries on the schedule", async (t) => {
      const s = await scene(t, backend);
      const row = await s.queue(await s.subscribe('http://127.0.0.1:1/refused'), { target_code: 500, attempts: 1 });
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock },
        { target: s.target, schedule: { delaysMs: [1_000, 5_000], random: () => 0.5 } },
      );
      assert.equal(await round(runner), 1);
      const stored = await s.read(row.uuid);
      assert.deepEqual(
        [stored.state, stored.target_code, stored.attempts, stored.due, stored.locked_by],
        ['deliver', 500, 2, NOW + 5_000_000, null],
      );
    });

    it('a row whose credentials cannot be opened fails alone, without a request; the others are delivered', async (t) => {
      const s = await scene(t, backend);
      const stub = await s.stub();
      const sealed = await s.subscribe(stub.url, {
        auth: sealSecret('{"type":"header","header":{"type":"Bearer","credentials":"x"}}', new Keyring([randomBytes(32)])),
      });
      const plain = await s.subscribe(stub.url);
      const rows = [await s.queue(sealed), await s.queue(plain)];
      assert.equal(
        await round(
          testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, secretKey: new Keyring([randomBytes(32)]) }),
        ),
        2,
      );
      assert.equal((await s.read(rows[0]!.uuid)).state, 'failed');
      assert.match(
        (await s.attempts(rows[0]!.uuid))[0]?.error ?? '',
        /^not sent: stored target credentials are encrypted; start the service with the NOTIFICATIONS_SECRET_KEY/,
      );
      assert.equal((await s.read(rows[1]!.uuid)).state, 'delivered');
      assert.equal(stub.requests.length, 1);
    });

    it('a target client that throws instead of answering: that try is recorded and retried later', async (t) => {
      const s = await scene(t, backend);
      const row = await s.queue(await s.subscribe('http://127.0.0.1:9/'));
      await s.target.close();
      assert.equal(await round(testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target })), 1);
      assert.deepEqual([(await s.read(row.uuid)).state, (await s.read(row.uuid)).attempts], ['deliver', 1]);
      assert.deepEqual(await s.attempts(row.uuid), [{ status: null, error: 'not sent: the target client is closed' }]);
    });

    it('rows of a subscription deleted or disabled since they were queued are cancelled, not sent', async (t) => {
      const s = await scene(t, backend);
      const stub = await s.stub();
      const rows = [
        await s.queue(await s.subscribe(stub.url, { deleted: 5 })),
        await s.queue(await s.subscribe(stub.url, { disabled: 5 })),
      ];
      assert.equal(await round(testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target })), 2);
      for (const row of rows) assert.equal((await s.read(row.uuid)).state, 'cancelled');
      assert.equal(stub.requests.length, 0);
    });

    it("a slow origin fills only its own slots: another origin's rows, queued after, are delivered meanwhile", async (t) => {
      const s = await scene(t, backend, { connections: 2 });
      const { stub: slow, release } = await s.holdingStub();
      const fast = await s.stub();
      const slowSubscription = await s.subscribe(slow.url);
      const fastSubscription = await s.subscribe(fast.url);
      // Older than every fast row: a runner taking rows in due order would give them every slot.
      const slowRows: MatchesTable[] = [];
      for (let i = 0; i < 20; i++) slowRows.push(await s.queue(slowSubscription));
      const fastRows: MatchesTable[] = [];
      for (let i = 0; i < 3; i++) fastRows.push(await s.queue(fastSubscription));
      const runner = testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, connectionsPerOrigin: 2, batchSize: 4 });
      // A claim of 4 takes only slow rows, and fills the slow origin's lane (twice its window of
      // two: two on the wire, two waiting); the next claims leave it out and reach the fast rows.
      for (let i = 0; i < 3; i++) await runner.intake();
      const fastDone = async () => (await Promise.all(fastRows.map((r) => s.read(r.uuid)))).every((r) => r.state === 'delivered');
      await eventually(fastDone, 'the fast origin served while the slow one held every one of its connections');
      assert.equal(slow.requests.length, 2, 'no more on the wire to the slow origin than its connections');
      release();
      await runner.idle();
      const taken = (await Promise.all(slowRows.map((r) => s.read(r.uuid)))).filter((r) => r.state === 'delivered');
      assert.equal(taken.length, 4, 'the slow lane held four rows, no more');
      assert.equal(slow.requests.length, 4);
    });

    it('claims take no more than the lanes have room for: rows of a slow origin are claimed as room comes, none given back', async (t) => {
      const s = await scene(t, backend, { connections: 2 });
      const held: Array<() => void> = [];
      const stub = await s.stub(async (_request, response) => {
        await new Promise<void>((resolve) => held.push(resolve));
        response.writeHead(200).end();
      });
      t.after(() => held.forEach((answer) => answer()));
      const subscription = await s.subscribe(stub.url);
      const rows: MatchesTable[] = [];
      for (let i = 0; i < 16; i++) rows.push(await s.queue(subscription));
      const inner = matchQueue(s.handle);
      let claimed = 0;
      let givenBack = 0;
      const queue: MatchQueue = {
        ...inner,
        claim: async (...args) => {
          const taken = await inner.claim(...args);
          claimed += taken.length;
          return taken;
        },
        settle: (holder, settlement, at) => {
          givenBack += settlement.release?.length ?? 0;
          return inner.settle(holder, settlement, at);
        },
      };
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock, queue },
        { target: s.target, connectionsPerOrigin: 2, batchSize: 4 },
      );
      const delivered = async () => (await Promise.all(rows.map((r) => s.read(r.uuid)))).filter((r) => r.state === 'delivered').length;
      // Four: two on the wire, two waiting, the lane full.
      await runner.intake();
      assert.equal(claimed, 4);
      // The target answers one at a time: each answer leaves the lane room for one, and a claim
      // of the batch would have given three back.
      for (let done = 1; done <= 16; done++) {
        await eventually(() => held.length > 0, 'a request waiting');
        held.shift()!();
        await eventually(async () => (await delivered()) === done, `${done} delivered`);
        await runner.intake();
      }
      assert.equal(givenBack, 0, 'none claimed only to be given back');
      assert.equal(claimed, 16, 'each row claimed once');
    });

    it('a handed row of a full lane waits in the handoff while its origin keeps up, and goes back to the queue once it does not', async (t) => {
      const s = await scene(t, backend);
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let answered = 0;
      // The first request answered at once (the origin is quick: its window grows to two), the others held.
      const stub = await s.stub(async (_request, response) => {
        if (answered++ > 0) await held;
        response.writeHead(200).end();
      });
      // One connection, and a time-out far past what a loaded machine takes to run the test.
      const target = createTargetClient({ timeoutMs: 20_000, connectionsPerOrigin: 1, guard: addressGuard({ allow: [], deny: [] }) });
      t.after(async () => {
        release();
        await target.close();
      });
      const subscription = await s.subscribe(stub.url);
      const inbox = new Handoff(10, 0);
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock },
        { target, targetTimeoutMs: 20_000, connectionsPerOrigin: 1, inbox },
      );
      const hand = async () => {
        const row = await s.queue(subscription, { locked_by: 'me', locked_until: s.now + TEST_LEASE_US });
        const event = await s.handle.db.selectFrom('events').selectAll().where('uuid', '=', row.event_uuid).executeTakeFirstOrThrow();
        inbox.reserve(1);
        inbox.put([{ row, event }]);
        return row;
      };
      await hand();
      await round(runner);
      assert.equal(stub.requests.length, 1, 'the quick answer');
      // Its lane holds twice its window of two: two sent (one on the wire, one waiting in the
      // sender for the connection), two waiting here. The fifth row has no room.
      for (let i = 0; i < 4; i++) await hand();
      const waiting = await hand();
      await runner.intake();
      await eventually(() => stub.requests.length === 2, 'one on the wire');
      assert.equal(inbox.size, 1, 'left in the handoff');
      await runner.intake();
      assert.equal(inbox.size, 1, 'still there');
      assert.equal((await s.read(waiting.uuid)).locked_by, 'me', 'still leased: nothing written');
      // Nothing heard from the origin for longer than keeping up allows: it may be hanging.
      s.now += KEEPING_UP_US + 1;
      await runner.intake();
      assert.equal(inbox.size, 0);
      await eventually(async () => (await s.read(waiting.uuid)).locked_by === null, 'given back to the queue');
      assert.equal((await s.read(waiting.uuid)).state, 'deliver');
      release();
      await runner.idle();
      assert.equal(await round(runner), 1, 'claimed again once its lane had room');
      assert.equal((await s.read(waiting.uuid)).state, 'delivered');
    });

    it('an origin that keeps giving no answer is down: probed once a second while its rows wait untried', async (t) => {
      const s = await scene(t, backend);
      const subscription = await s.subscribe('http://127.0.0.1:1/refused');
      const rows: MatchesTable[] = [];
      for (let i = 0; i < 30; i++) rows.push(await s.queue(subscription));
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock },
        { target: s.target, connectionsPerOrigin: 4, schedule: { delaysMs: [60_000, 60_000], random: () => 0.5 } },
      );
      const tried = async () => (await s.handle.db.selectFrom('attempts').select('uuid').execute()).length;

      await round(runner);
      // One per connection (the window of an origin not heard from yet), and the next row in
      // each slot freed before the origin was known to be down.
      const first = 4 + DOWN_AFTER - 1;
      assert.equal(await tried(), first);
      assert.deepEqual(runner.downOrigins(), ['http://127.0.0.1:1']);
      await round(runner);
      await round(runner);
      assert.equal(await tried(), first, 'down: nothing more within the second');
      for (let second = 1; second <= 3; second++) {
        s.now += 1_000_000;
        await round(runner);
        await round(runner);
        assert.equal(await tried(), first + second, `one probe in second ${second}`);
      }
      const untried = (await Promise.all(rows.map((r) => s.read(r.uuid)))).filter((r) => r.attempts === 0);
      assert.equal(untried.length, 30 - first - 3, 'the others were never tried');
      for (const row of untried) assert.equal(row.due, rows.find((r) => r.uuid === row.uuid)!.due, 'and kept their place');
    });

    it('a down origin answering a probe is up again: its waiting rows are sent in full', async (t) => {
      const s = await scene(t, backend);
      const port = await freePort();
      const subscription = await s.subscribe(`http://127.0.0.1:${port}/`);
      const rows: MatchesTable[] = [];
      for (let i = 0; i < 16; i++) rows.push(await s.queue(subscription));
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock },
        { target: s.target, connectionsPerOrigin: 4, schedule: { delaysMs: [60_000, 60_000], random: () => 0.5 } },
      );
      await round(runner);
      assert.deepEqual(runner.downOrigins(), [`http://127.0.0.1:${port}`], 'nothing listens yet');
      const received: string[] = [];
      const server = createServer((request, response) => {
        request.resume().on('end', () => response.writeHead(204).end());
        received.push(request.url ?? '');
      });
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
      s.now += 1_000_000;
      await round(runner);
      assert.deepEqual(runner.downOrigins(), [], 'the probe was answered');
      for (let i = 0; i < 4; i++) await round(runner);
      const states = (await Promise.all(rows.map((r) => s.read(r.uuid)))).map((r) => r.state);
      // 16 rows: 6 tried before the origin was known to be down (due again in a minute), 10 not.
      const tried = 4 + DOWN_AFTER - 1;
      assert.equal(states.filter((state) => state === 'delivered').length, 16 - tried, 'the probe, then the rows that waited untried');
      assert.equal(received.length, 16 - tried);
    });

    it('a row the sender could not start within its lease (every connection busy) goes back untried', async (t) => {
      const s = await scene(t, backend, { connections: 1 });
      let holding = false;
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      const stub = await s.stub(async (_request, response) => {
        if (holding) await held;
        response.writeHead(200).end();
      });
      const subscription = await s.subscribe(stub.url);
      const inbox = new Handoff(10, 0);
      const runner = testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, connectionsPerOrigin: 1, inbox });
      // A quick answer first: the origin's window grows to two, one on the wire and one waiting in the sender.
      await s.queue(subscription);
      assert.equal(await round(runner), 1);
      holding = true;
      const hand = async (leaseLeftUs: number) => {
        const row = await s.queue(subscription, { locked_by: 'me', locked_until: s.now + leaseLeftUs });
        const event = await s.handle.db.selectFrom('events').selectAll().where('uuid', '=', row.event_uuid).executeTakeFirstOrThrow();
        inbox.reserve(1);
        inbox.put([{ row, event }]);
        return row;
      };
      const onTheWire = await hand(TEST_LEASE_US);
      // 2.6 s of lease: room for the 2 s time-out and 0.5 s to record it, if sent within 0.1 s.
      const tooLate = await hand(2_600_000);
      await runner.intake();
      await eventually(async () => (await s.read(tooLate.uuid)).locked_by === null, 'given back once no connection came free in time');
      assert.deepEqual([(await s.read(tooLate.uuid)).state, (await s.read(tooLate.uuid)).attempts], ['deliver', 0]);
      assert.deepEqual(await s.attempts(tooLate.uuid), [], 'not an attempt');
      release();
      await runner.idle();
      assert.equal((await s.read(onTheWire.uuid)).state, 'delivered');
      assert.equal(stub.requests.length, 2, 'the quick one and the one on the wire');
    });

    it('rows that waited until their lease has no room for an exchange go back to the queue untried, keeping their place', async (t) => {
      const s = await scene(t, backend, { connections: 1 });
      const { stub: slow, release } = await s.holdingStub();
      const subscription = await s.subscribe(slow.url);
      const rows: MatchesTable[] = [];
      for (let i = 0; i < 4; i++) rows.push(await s.queue(subscription));
      const runner = testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, connectionsPerOrigin: 1 });
      await runner.intake();
      await eventually(() => slow.requests.length === 1, 'one on the wire, one waiting in the lane, two left in the queue');
      // 2 s time-out and 0.5 s to settle: with less than 2.5 s of lease left, a row is not sent.
      s.now += TEST_LEASE_US - 2_000_000;
      await runner.intake();
      const renewed = (row: MatchesTable) => row.locked_until === null || row.locked_until === s.now + TEST_LEASE_US;
      await eventually(
        async () => (await Promise.all(rows.slice(1).map((r) => s.read(r.uuid)))).every(renewed),
        'the old leases are given up',
      );
      const waiting = await Promise.all(rows.slice(1).map((r) => s.read(r.uuid)));
      for (const [i, row] of waiting.entries()) {
        assert.deepEqual([row.state, row.attempts, row.due], ['deliver', 0, rows[i + 1]!.due], 'untried, in its place');
        // Given back, and either still in the queue or claimed again under a fresh lease.
        assert.ok(row.locked_until === null || row.locked_until === s.now + TEST_LEASE_US, `lease until ${row.locked_until}`);
      }
      release();
      await runner.idle();
      while ((await round(runner)) > 0);
      assert.deepEqual(
        (await Promise.all(rows.map((r) => s.read(r.uuid)))).map((r) => r.state),
        ['delivered', 'delivered', 'delivered', 'delivered'],
      );
      assert.equal(slow.requests.length, 4, 'each sent once');
    });

    it('rows waiting for a subscription whose target changes go back, and are sent to the new target', async (t) => {
      const s = await scene(t, backend, { connections: 1 });
      const { stub: old, release } = await s.holdingStub();
      const moved = await s.stub();
      const subscription = await s.subscribe(old.url);
      const rows = [await s.queue(subscription), await s.queue(subscription), await s.queue(subscription)];
      const runner = testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target, connectionsPerOrigin: 1 });
      // One on the wire, the second waiting in the lane, the third left in the queue.
      await runner.intake();
      await eventually(() => old.requests.length === 1, 'the first is on the wire');
      const changed = { ...subscription, target_url: moved.url, updated: 2 };
      await s.handle.db
        .updateTable('subscriptions')
        .set({ target_url: moved.url, updated: 2 })
        .where('uuid', '=', subscription.uuid)
        .execute();
      runner.subscriptionChanged({ kind: 'upsert', row: changed });
      await eventually(async () => (await s.read(rows[1]!.uuid)).locked_by === null, 'given back');
      release();
      await runner.idle();
      while ((await round(runner)) > 0);
      assert.deepEqual(
        (await Promise.all(rows.map((r) => s.read(r.uuid)))).map((r) => r.state),
        ['delivered', 'delivered', 'delivered'],
      );
      assert.equal(old.requests.length, 1, 'only the one already on its way went to the old target');
      assert.equal(moved.requests.length, 2);
    });

    it('a subscription whose target changes while none of its rows wait has its next row sent to the new target', async (t) => {
      const s = await scene(t, backend);
      const old = await s.stub();
      const moved = await s.stub();
      const subscription = await s.subscribe(old.url);
      const runner = testDeliveryRunner({ handle: s.handle, clock: s.clock }, { target: s.target });
      await s.queue(subscription);
      assert.equal(await round(runner), 1);
      assert.equal(old.requests.length, 1);

      await s.handle.db
        .updateTable('subscriptions')
        .set({ target_url: moved.url, updated: 2 })
        .where('uuid', '=', subscription.uuid)
        .execute();
      runner.subscriptionChanged({ kind: 'upsert', row: { ...subscription, target_url: moved.url, updated: 2 } });
      const next = await s.queue(subscription);
      assert.equal(await round(runner), 1);
      assert.equal((await s.read(next.uuid)).state, 'delivered');
      assert.deepEqual([old.requests.length, moved.requests.length], [1, 1]);
    });

    it('rows waiting when the signing secret is rotated go back, and are signed with both secrets until the overlap ends', async (t) => {
      const s = await scene(t, backend, { connections: 1 });
      const { stub, release } = await s.holdingStub();
      const subscription = await s.subscribe(stub.url);
      const rows = [await s.queue(subscription), await s.queue(subscription)];
      const overlapUs = 60_000_000;
      const runner = testDeliveryRunner(
        { handle: s.handle, clock: s.clock },
        { target: s.target, connectionsPerOrigin: 1, secretOverlapUs: overlapUs },
      );
      await runner.intake();
      await eventually(() => stub.requests.length === 1, 'the first is on the wire');
      const rotated = { secret: `whsec_${randomBytes(32).toString('base64')}`, at: s.now };
      const changes = {
        signing_secret: rotated.secret,
        previous_signing_secret: subscription.signing_secret,
        secret_rotated: rotated.at,
        updated: 2,
      };
      await s.handle.db.updateTable('subscriptions').set(changes).where('uuid', '=', subscription.uuid).execute();
      runner.subscriptionChanged({ kind: 'upsert', row: { ...subscription, ...changes } });
      await eventually(async () => (await s.read(rows[1]!.uuid)).locked_by === null, 'given back');
      release();
      await runner.idle();
      while ((await round(runner)) > 0);
      // Past the overlap: the previous secret signs no more.
      s.now = rotated.at + overlapUs;
      rows.push(await s.queue(subscription));
      while ((await round(runner)) > 0);
      assert.equal(stub.requests.length, 3);
      const verifies = (secret: string, i: number) => {
        const { body, headers } = stub.requests[i]!;
        try {
          new Webhook(secret).verify(body, headers as Record<string, string>);
          return true;
        } catch {
          return false;
        }
      };
      assert.deepEqual([verifies(subscription.signing_secret, 0), verifies(rotated.secret, 0)], [true, false], 'sent before the rotation');
      assert.deepEqual([verifies(rotated.secret, 1), verifies(subscription.signing_secret, 1)], [true, true], 'within the overlap');
      assert.deepEqual([verifies(rotated.secret, 2), verifies(subscription.signing_secret, 2)], [true, false], 'after it');
      assert.deepEqual(
        stub.requests.map((r) => r.headers['webhook-id']),
        rows.map((r) => r.uuid),
      );
    });
  });
}

describeOn(POSTGRES, 'delivery runner, the database failing mid-round', () => {
  it('rows taken out of the handoff but not placed go back to the queue, not left to wait out their leases', async (t) => {
    const database = await createPostgres(POSTGRES_TEST_URL!);
    const direct = openDatabase(database.url);
    const proxy = await startDatabaseProxy(database.url);
    const handle = openDatabase(proxy.url, { timeoutMs: 300, boundStatements: true });
    const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
    t.after(async () => {
      proxy.release();
      await target.close();
      await handle.close();
      await proxy.close();
      await direct.close();
      await database.cleanup();
    });
    await syncSchema(direct);
    const subscription = subscriptionRow();
    await insertSubscription(direct.db, direct.capabilities, subscription);
    const eventUuid = randomUUID();
    const now = Date.now() * 1000;
    const row = {
      ...pendingMatch(eventUuid, subscription, now),
      state: 'deliver' as const,
      locked_by: 'me',
      locked_until: now + TEST_LEASE_US,
    };
    const event = { uuid: eventUuid, source: '/t', event_id: 'e1', type: 't', spec_version: '1.0', body: '{}', received: now };
    await logEvent(direct.db, event, [row]);
    const inbox = new Handoff(10, 0);
    inbox.reserve(1);
    inbox.put([{ row, event }]);
    const runner = testDeliveryRunner({ handle }, { target, inbox });

    proxy.hold();
    await assert.rejects(runner.intake(), (error: unknown) => isDatabaseUnavailable(error));
    proxy.release();
    await runner.idle();
    const stored = await direct.db
      .selectFrom('matches')
      .select(['state', 'locked_by', 'attempts'])
      .where('uuid', '=', row.uuid)
      .executeTakeFirstOrThrow();
    assert.deepEqual(stored, { state: 'deliver', locked_by: null, attempts: 0 }, 'given back untried');
  });
});
