/**
 * One rule for an event purged (eventpurge --force) while its rows are with a runner, the same
 * for the policy and the delivery runner (runners/runner-core.ts): a claimed row whose event is
 * gone by the time the runner reads it is dropped, not attempted and nothing written of it (it
 * went with its event); an attempt already under way is made, and nothing is recorded of it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it, type TestContext } from 'node:test';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { logEvent, pendingMatch } from '../../src/db/stores/events.js';
import { type MatchQueue, matchQueue } from '../../src/db/stores/match-queue.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchesTable, SubscriptionRow } from '../../src/db/tables.js';
import { createTargetClient, type TargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { createPolicyClient } from '../../src/policy/policy-client.js';
import type { PolicySource } from '../../src/policy/runner.js';
import { describeOn, openTestDatabase, type TestBackend, testBackends } from '../support/database.js';
import { eventually, type HttpStub, type StubAnswer, startStub } from '../support/http-stub.js';
import { round, testDeliveryRunner, testPolicyRunner } from '../support/runners.js';
import { subscriptionRow } from '../support/subscription-row.js';

interface Scene {
  handle: DatabaseHandle;
  /** The queue the runner is given: it purges the events of `purgeOnClaim` as soon as a claim has taken their rows. */
  queue: MatchQueue;
  purgeOnClaim: string[];
  /** The rows named by each settlement written (changed or given back), in order. */
  settled: string[];
  /** Errors the runner reported. */
  errors: unknown[];
  subscribe(fields?: Partial<SubscriptionRow>): Promise<SubscriptionRow>;
  /** An event `id` with one row of `subscription`, due now at `stage`. */
  log(subscription: SubscriptionRow, stage: 'policy' | 'deliver', id: string): Promise<MatchesTable>;
  purge(eventUuid: string): Promise<void>;
  stored(): Promise<{ matches: unknown[]; attempts: unknown[] }>;
  stub(answer?: StubAnswer): Promise<HttpStub>;
  target(): TargetClient;
  policy(service: HttpStub): PolicySource;
}

async function scene(t: TestContext, backend: TestBackend): Promise<Scene> {
  const test = await openTestDatabase(backend);
  const closing: Array<() => Promise<void>> = [];
  t.after(async () => {
    for (const close of closing.reverse()) await close();
    await test.close();
  });
  const { handle } = test;
  const base = matchQueue(handle);
  const s: Scene = {
    handle,
    purgeOnClaim: [],
    settled: [],
    errors: [],
    queue: {
      ...base,
      claim: async (...args) => {
        const rows = await base.claim(...args);
        for (const uuid of s.purgeOnClaim.splice(0)) await s.purge(uuid);
        return rows;
      },
      settle: (holder, settlement, at) => {
        s.settled.push(...settlement.changes.map((c) => c.uuid), ...(settlement.release ?? []));
        return base.settle(holder, settlement, at);
      },
    },
    subscribe: async (fields = {}) => {
      const row = subscriptionRow(fields);
      await insertSubscription(handle.db, handle.capabilities, row);
      return row;
    },
    log: async (subscription, stage, id) => {
      const eventUuid = randomUUID();
      const now = Date.now() * 1000;
      const match = { ...pendingMatch(eventUuid, subscription, now), state: stage };
      const body = JSON.stringify({ specversion: '1.0', id, source: '/purged', type: 't' });
      await logEvent(handle.db, { uuid: eventUuid, source: '/purged', event_id: id, type: 't', spec_version: '1.0', body, received: now }, [
        match,
      ]);
      return match;
    },
    // What eventpurge --force does to one event: its matches and attempts go with it (cascade).
    purge: async (eventUuid) => void (await handle.db.deleteFrom('events').where('uuid', '=', eventUuid).execute()),
    stored: async () => ({
      matches: await handle.db.selectFrom('matches').select(['uuid', 'state']).execute(),
      attempts: await handle.db.selectFrom('attempts').select('match_uuid').execute(),
    }),
    stub: async (answer) => {
      const stub = await startStub(answer);
      closing.push(() => stub.close());
      return stub;
    },
    target: () => {
      const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
      closing.push(() => target.close());
      return target;
    },
    policy: (service) => {
      const policy = createPolicyClient({ baseUrl: service.url, timeoutMs: 2_000 });
      closing.push(() => policy.close());
      return policy;
    },
  };
  return s;
}

const idOf = (body: string) => (JSON.parse(body) as { id: string }).id;

for (const backend of testBackends()) {
  describeOn(backend, `an event purged while its rows are with a runner (${backend.name})`, () => {
    /**
     * Two events, each with one row at `stage`, both claimed, the first purged before its
     * event is read: only the other reaches `called` (the target, or the policy service), is
     * settled and ends `state`.
     */
    async function claimedThenPurged(
      t: TestContext,
      stage: 'policy' | 'deliver',
      runnerOf: (s: Scene, called: HttpStub) => { intake(): Promise<number>; idle(): Promise<void> },
      state: MatchesTable['state'],
    ): Promise<void> {
      const s = await scene(t, backend);
      const called = await s.stub();
      const subscription = await s.subscribe({ target_url: called.url });
      const purged = await s.log(subscription, stage, 'purged-1');
      const kept = await s.log(subscription, stage, 'kept-1');
      s.purgeOnClaim.push(purged.event_uuid);

      assert.equal(await round(runnerOf(s, called)), 2, 'both rows claimed');
      assert.deepEqual(
        called.requests.map((r) => idOf(r.body)),
        ['kept-1'],
      );
      assert.deepEqual(s.settled, [kept.uuid], 'no settlement names the purged row');
      assert.deepEqual((await s.stored()).matches, [{ uuid: kept.uuid, state }]);
      assert.deepEqual(s.errors, []);
    }

    it('delivery: a claimed row whose event is purged before it is read is not sent, and nothing is written of it', (t) =>
      claimedThenPurged(
        t,
        'deliver',
        (s) => testDeliveryRunner({ handle: s.handle, queue: s.queue }, { target: s.target(), onError: (e) => s.errors.push(e) }),
        'delivered',
      ));

    it('policy: a claimed row whose event is purged before it is read is not asked about, and nothing is written of it', (t) =>
      claimedThenPurged(
        t,
        'policy',
        (s, service) =>
          testPolicyRunner({ handle: s.handle, queue: s.queue }, { policy: s.policy(service), onError: (e) => s.errors.push(e) }),
        'deliver',
      ));

    it('delivery: the event purged while its delivery is in flight: the delivery is made, nothing is recorded of it', async (t) => {
      const s = await scene(t, backend);
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      const hook = await s.stub(async (_request, response) => {
        await held;
        response.writeHead(200).end();
      });
      t.after(() => release());
      const subscription = await s.subscribe({ target_url: hook.url });
      const purged = await s.log(subscription, 'deliver', 'purged-1');
      const runner = testDeliveryRunner({ handle: s.handle, queue: s.queue }, { target: s.target(), onError: (e) => s.errors.push(e) });

      assert.equal(await runner.intake(), 1);
      await eventually(() => hook.requests.length === 1, 'the delivery is in flight');
      await s.purge(purged.event_uuid);
      release();
      await runner.idle();
      assert.deepEqual(await s.stored(), { matches: [], attempts: [] });
      assert.deepEqual(s.errors, []);
    });

    it('policy: the event purged while its question is in flight: the answer (no decision) records nothing of it', async (t) => {
      const s = await scene(t, backend);
      let eventUuid = '';
      const service = await s.stub(async (_request, response) => {
        await s.purge(eventUuid);
        response.writeHead(503).end();
      });
      const subscription = await s.subscribe();
      eventUuid = (await s.log(subscription, 'policy', 'purged-1')).event_uuid;
      const runner = testPolicyRunner(
        { handle: s.handle, queue: s.queue },
        { policy: s.policy(service), onError: (e) => s.errors.push(e) },
      );

      assert.equal(await round(runner), 1);
      assert.equal(service.requests.length, 1, 'asked');
      assert.deepEqual(await s.stored(), { matches: [], attempts: [] }, 'neither the retry nor its attempt');
      assert.deepEqual(s.errors, []);
    });
  });
}
