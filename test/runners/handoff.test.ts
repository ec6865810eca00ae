/**
 * Work handed between stages in memory: /receive's rows reach the policy stage and its allowed
 * rows the delivery stage without a claim, leased in the database all along.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { createTargetClient } from '../../src/delivery/target-client.js';
import { EventLogBatch } from '../../src/receive/event-log-batch.js';
import { receiveEvent } from '../../src/receive/receive.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { allowAll, createPolicyClient } from '../../src/policy/policy-client.js';
import { ClaimPacer } from '../../src/runners/claim-pacer.js';
import { type HandedMatch, Handoff } from '../../src/runners/handoff.js';
import type { Clock } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { round, testDeliveryRunner, testPolicyRunner } from '../support/runners.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';

const LEASE_US = 30_000_000;

function handed(lockedUntil: number): HandedMatch {
  const row = matchRow({ event_uuid: 'e', subscription_uuid: 's', owner: 'o', locked_until: lockedUntil, locked_by: 'me' });
  return { row, event: { uuid: 'e', source: '/s', event_id: 'i', type: 't', spec_version: '1.0', body: '{}', received: 1 } };
}

/** A subscription to `$.n` (delivering to `targetUrl`), written to the database and loaded in a matcher. */
async function matcherOfOneSubscription(handle: DatabaseHandle, targetUrl?: string): Promise<LiveMatcher> {
  const subscription = subscriptionRow({ jsonpath: '$.n', ...(targetUrl === undefined ? {} : { target_url: targetUrl }) });
  await insertSubscription(handle.db, handle.capabilities, subscription);
  const matcher = new LiveMatcher();
  matcher.load([subscription]);
  return matcher;
}

/** Receives event `id` from `source`, its document `{…, n}`, the rows it matches handed to `toPolicy`. */
function receiver(handle: DatabaseHandle, matcher: LiveMatcher, clock: Clock, toPolicy: Handoff, source: string) {
  return (n: number, id = `e${n}`) => {
    const document = { specversion: '1.0', id, source, type: 't', n };
    return receiveEvent(
      { eventLog: new EventLogBatch(handle), matcher, clock, handoff: { to: toPolicy, holder: 'me', leaseUs: LEASE_US } },
      { specVersion: '1.0', id, source, type: 't', document, text: JSON.stringify(document) },
    );
  };
}

describe('handoff', () => {
  it('holds no more rows than its capacity, counting the reserved ones', () => {
    const handoff = new Handoff(3, 0);
    assert.equal(handoff.reserve(2), true);
    assert.equal(handoff.reserve(2), false, 'two reserved plus two is over three');
    handoff.overflowDrained();
    handoff.put([handed(LEASE_US)]);
    handoff.release(1);
    assert.equal(handoff.reserve(2), true, 'one waiting, two reserved');
    assert.equal(handoff.reserve(1), false);
  });

  it('once it overflowed, takes nothing more until the queue has been claimed dry', () => {
    const handoff = new Handoff(3, 0);
    assert.equal(handoff.overflowing, false);
    assert.equal(handoff.reserve(4), false);
    assert.equal(handoff.overflowing, true);
    assert.equal(handoff.reserve(1), false, 'there is room, but older rows wait in the queue');
    handoff.overflowDrained();
    assert.equal(handoff.reserve(1), true);
  });

  it('tells its listeners each time it stops overflowing, and only then', () => {
    const handoff = new Handoff(1, 0);
    let drained = 0;
    handoff.whenDrained(() => drained++);
    handoff.overflowDrained();
    assert.equal(drained, 0, 'it was not overflowing');
    handoff.reserve(2);
    handoff.overflowDrained();
    handoff.overflowDrained();
    assert.equal(drained, 1);
  });

  it('hands out rows in order, up to the limit, leaving out those whose lease is nearly over', () => {
    const handoff = new Handoff(10, 5_000_000);
    const now = 100_000_000;
    const items = [handed(now + LEASE_US), handed(now + 1_000), handed(now + LEASE_US), handed(now + LEASE_US)];
    handoff.reserve(items.length);
    handoff.put(items);
    assert.deepEqual(handoff.take(3, now), [items[0], items[2]], 'the second may be the claim path’s by now');
    assert.deepEqual(handoff.take(3, now), [items[3]]);
    assert.deepEqual(handoff.take(3, now), []);
  });

  it('leaves the rows the taker says stay, in their place, and takes those behind them', () => {
    const handoff = new Handoff(10, 5_000_000);
    const now = 100_000_000;
    const items = [handed(now + LEASE_US), handed(now + LEASE_US), handed(now + 1_000), handed(now + LEASE_US), handed(now + LEASE_US)];
    handoff.reserve(items.length);
    handoff.put(items);
    const staying = new Set([items[0], items[3]]);
    assert.deepEqual(
      handoff.take(1, now, (item) => staying.has(item)),
      [items[1]],
    );
    assert.deepEqual(
      handoff.take(5, now, (item) => staying.has(item)),
      [items[4]],
      'the third’s lease was nearly over',
    );
    assert.deepEqual(handoff.take(5, now), [items[0], items[3]], 'they kept their order');
  });

  it('stops overflowing only once it is empty: rows left in it are older than those in the queue', () => {
    const handoff = new Handoff(1, 0);
    handoff.reserve(1);
    handoff.put([handed(LEASE_US)]);
    assert.equal(handoff.reserve(1), false);
    assert.equal(handoff.take(1, 0, () => true).length, 0);
    handoff.overflowDrained();
    assert.equal(handoff.overflowing, true, 'a row still waits here');
    assert.equal(handoff.take(1, 0).length, 1);
    handoff.overflowDrained();
    assert.equal(handoff.overflowing, false);
  });
});

for (const backend of testBackends()) {
  describeOn(backend, `runners handing work on in memory (${backend.name})`, () => {
    it('routes a received event to its target without claiming, its rows leased until settled, its allowance written with its delivery', async (t) => {
      const test = await openTestDatabase(backend);
      const stub = await startStub();
      const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
      t.after(async () => {
        await target.close();
        await stub.close();
        await test.close();
      });
      const matcher = await matcherOfOneSubscription(test.handle, stub.url);
      let now = Date.now() * 1000;
      const clock = () => now;
      const toPolicy = new Handoff(100, LEASE_US / 2);
      const toDelivery = new Handoff(100, LEASE_US / 2);
      const rows = () =>
        test.handle.db.selectFrom('matches').select(['state', 'policy_code', 'attempts', 'locked_by', 'locked_until']).execute();

      const logged = await receiver(test.handle, matcher, clock, toPolicy, '/handoff')(1, 'handed-1');
      assert.equal(logged.matches, 1);
      assert.deepEqual(
        await rows(),
        [{ state: 'policy', policy_code: null, attempts: 0, locked_by: 'me', locked_until: now + LEASE_US }],
        'written leased: no claim can take it',
      );
      const leasedUntil = now + LEASE_US;

      now += 1_000;
      let woken = 0;
      const policy = testPolicyRunner(
        { handle: test.handle, clock },
        { policy: allowAll, inbox: toPolicy, next: toDelivery, onAllowed: () => woken++ },
      );
      assert.equal(await round(policy), 1);
      assert.deepEqual(
        await rows(),
        [{ state: 'policy', policy_code: null, attempts: 0, locked_by: 'me', locked_until: leasedUntil }],
        'allowed and handed on as it was: still leased, nothing written',
      );
      assert.equal(woken, 1, 'the delivery stage is woken');
      assert.equal(await round(policy), 0, 'nothing left to hand out or claim');

      const delivery = testDeliveryRunner({ handle: test.handle, clock }, { target, inbox: toDelivery });
      assert.equal(await round(delivery), 1);
      assert.deepEqual(
        await rows(),
        [{ state: 'delivered', policy_code: 200, attempts: 1, locked_by: null, locked_until: null }],
        'the allowance written with the outcome',
      );
      assert.equal(stub.requests.length, 1);
      assert.equal((JSON.parse(stub.requests[0]!.body) as { id: string }).id, 'handed-1');
      assert.equal(await round(delivery), 0, 'delivered once');
    });

    it('settles an allowed row whose lease is a quarter spent, unleased, for delivery to claim, instead of handing it on', async (t) => {
      const test = await openTestDatabase(backend);
      t.after(() => test.close());
      const matcher = await matcherOfOneSubscription(test.handle);
      let now = Date.now() * 1000;
      const clock = () => now;
      const toPolicy = new Handoff(100, LEASE_US / 2);
      const toDelivery = new Handoff(100, LEASE_US / 2);
      await receiver(test.handle, matcher, clock, toPolicy, '/late')(1, 'late-1');

      // The question waited: a quarter of the lease and a moment more has gone.
      now += LEASE_US / 4 + 1_000;
      const policy = testPolicyRunner({ handle: test.handle, clock }, { policy: allowAll, inbox: toPolicy, next: toDelivery });
      assert.equal(await round(policy), 1);
      assert.deepEqual(
        await test.handle.db.selectFrom('matches').select(['state', 'policy_code', 'locked_by']).execute(),
        [{ state: 'deliver', policy_code: 200, locked_by: null }],
        'written allowed and released',
      );
      assert.equal(toDelivery.reserve(100), true, 'nothing was handed on');
    });

    it('hands on a row whose event was purged while the policy service was being asked, as a delivery in flight, recording nothing of it', async (t) => {
      const test = await openTestDatabase(backend);
      const stub = await startStub();
      let eventUuid = '';
      // The policy service answers only after the event is gone (eventpurge --force meanwhile).
      const policyService = await startStub(async (_request, response) => {
        await test.handle.db.deleteFrom('events').where('uuid', '=', eventUuid).execute();
        response.writeHead(200).end();
      });
      const policy = createPolicyClient({ baseUrl: policyService.url, timeoutMs: 2_000 });
      const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
      t.after(async () => {
        await target.close();
        await policy.close();
        await stub.close();
        await policyService.close();
        await test.close();
      });
      const matcher = await matcherOfOneSubscription(test.handle, stub.url);
      const clock = () => Date.now() * 1000;
      const toPolicy = new Handoff(100, LEASE_US / 2);
      const toDelivery = new Handoff(100, LEASE_US / 2);
      const logged = await receiver(test.handle, matcher, clock, toPolicy, '/handoff')(1, 'purged-1');
      eventUuid = logged.uuid;

      assert.equal(await round(testPolicyRunner({ handle: test.handle, clock }, { policy, inbox: toPolicy, next: toDelivery })), 1);
      assert.equal(policyService.requests.length, 1);
      assert.deepEqual(await test.handle.db.selectFrom('matches').selectAll().execute(), [], 'the match went with its event');
      assert.equal(await round(testDeliveryRunner({ handle: test.handle, clock }, { target, inbox: toDelivery })), 1, 'handed on');
      await eventually(() => stub.requests.length === 1, 'the delivery under way when the event was purged is made');
      assert.deepEqual(await test.handle.db.selectFrom('matches').selectAll().execute(), [], 'and nothing is recorded of it');
      assert.deepEqual(await test.handle.db.selectFrom('attempts').selectAll().execute(), []);
      assert.equal(toDelivery.reserve(100), true, 'the room it took is free again');
    });

    it('claims the rows that overflowed into the queue before new ones, and retries while busy with new work', async (t) => {
      const test = await openTestDatabase(backend);
      t.after(() => test.close());
      const matcher = await matcherOfOneSubscription(test.handle);
      const now = Date.now() * 1000;
      const clock = () => now;
      const toPolicy = new Handoff(2, LEASE_US / 2);
      const receive = receiver(test.handle, matcher, clock, toPolicy, '/overflow');
      const settled = async () =>
        (
          await test.handle.db
            .selectFrom('matches')
            .innerJoin('events', 'events.uuid', 'matches.event_uuid')
            .select(['events.event_id', 'matches.state'])
            .execute()
        )
          .filter((r) => r.state === 'deliver')
          .map((r) => r.event_id)
          .sort();
      let pacerNow = 0;
      const pacer = new ClaimPacer(100, 60_000, () => pacerNow);
      pacer.claimed(1, 1); // a claim just now: no claim besides handed work for a minute
      const policy = testPolicyRunner({ handle: test.handle, clock }, { policy: allowAll, inbox: toPolicy, pacer });

      for (const n of [1, 2, 3, 4]) await receive(n); // e1, e2 handed; e3, e4 overflow into the queue
      assert.equal(await round(policy), 2);
      assert.deepEqual(await settled(), ['e1', 'e2']);
      await receive(5); // the handoff has room again, but e3 and e4 are older
      assert.equal(await round(policy), 3, 'the queue, claimed at once though a claim was just made');
      assert.deepEqual(await settled(), ['e1', 'e2', 'e3', 'e4', 'e5']);
      await receive(6);
      assert.deepEqual(
        await test.handle.db.selectFrom('matches').select('locked_by').where('state', '=', 'policy').execute(),
        [{ locked_by: 'me' }],
        'the queue was claimed dry: new rows are handed over again',
      );

      // A row coming due in the queue (a retry) while new work keeps arriving.
      await test.handle.db
        .updateTable('matches')
        .set({ state: 'policy', due: now })
        .where('state', '=', 'deliver')
        .where('event_uuid', 'in', test.handle.db.selectFrom('events').select('uuid').where('event_id', '=', 'e1'))
        .execute();
      assert.equal(await round(policy), 1, 'only the handed row, within the minute');
      await receive(7);
      pacerNow += 60_000;
      assert.equal(await round(policy), 2, 'the handed row and the retry, a minute on');
    });

    it('asks the policy service no further ahead than delivery goes, and again as soon as delivery has caught up', async (t) => {
      const test = await openTestDatabase(backend);
      const policyService = await startStub();
      const targetService = await startStub();
      const policy = createPolicyClient({ baseUrl: policyService.url, timeoutMs: 2_000 });
      const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
      const matcher = await matcherOfOneSubscription(test.handle, targetService.url);
      const clock = () => Date.now() * 1000;
      const toPolicy = new Handoff(100, LEASE_US / 2);
      const toDelivery = new Handoff(1, LEASE_US / 2);
      const receive = receiver(test.handle, matcher, clock, toPolicy, '/ahead');
      // Each round of the policy runner reads its clock first: counted, they show its loop went round.
      let policyClockReadings = 0;
      const policyClock = () => {
        policyClockReadings++;
        return clock();
      };
      // Polled once a minute: only being woken makes it ask again within the test.
      const runner = testPolicyRunner(
        { handle: test.handle, clock: policyClock },
        { policy, inbox: toPolicy, next: toDelivery, pollMs: 60_000 },
      );
      const delivery = testDeliveryRunner({ handle: test.handle, clock }, { target, inbox: toDelivery });
      t.after(async () => {
        await runner.stop();
        await target.close();
        await policy.close();
        await targetService.close();
        await policyService.close();
        await test.close();
      });
      const states = async () =>
        (await test.handle.db.selectFrom('matches').select('state').execute())
          .map((r) => r.state)
          .sort()
          .join(' ');

      for (const n of [1, 2, 3]) await receive(n);
      assert.equal(await round(runner), 3);
      assert.equal(policyService.requests.length, 3);
      assert.equal(toDelivery.overflowing, true, 'one allowed row handed on, two in the queue');
      await receive(4);
      await receive(5);
      assert.equal(await round(runner), 0, 'nothing asked while allowed rows wait for room in delivery');
      assert.equal(policyService.requests.length, 3);
      assert.equal(await states(), 'deliver deliver policy policy policy', 'the handed row is written with its delivery');

      // Its loop's first round starts at once; woken meanwhile, as new work would, it goes round
      // again once that one has ended. (A round that dispatched questions would have read the
      // clock again too, and idle waits for what it started.)
      const readingsBefore = policyClockReadings;
      runner.start();
      runner.wake();
      await eventually(() => policyClockReadings >= readingsBefore + 2, 'two rounds of its loop');
      await runner.idle();
      assert.equal(policyService.requests.length, 3, 'its loop asks nothing either');
      assert.equal(await round(delivery), 1, 'the handed row');
      assert.equal(await round(delivery), 2, 'the queue, claimed dry');
      // Far within the minute poll: only being woken can ask in time.
      await eventually(() => policyService.requests.length >= 5, 'woken by delivery catching up, not by its minute poll');
      assert.equal(policyService.requests.length, 5);
    });
  });
}
