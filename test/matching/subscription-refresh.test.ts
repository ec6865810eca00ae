/**
 * A notified subscription is read and applied, unless it is this instance's own create, which
 * the create applied already; a create that stored nothing leaves nothing expected. The first
 * poll reaches back to when the matcher's load began.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { insertSubscription, type SubscriptionChange } from '../../src/db/stores/subscriptions.js';
import { ExpectedNotifications } from '../../src/db/expected-notifications.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { subscriptionRefresh } from '../../src/matching/subscription-refresh.js';
import { subscriptionService } from '../../src/subscriptions/service.js';
import { systemClock } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { defaultTargetGuard } from '../support/target-guard.js';

for (const backend of testBackends()) {
  describeOn(backend, `reading notified subscriptions (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    before(async () => {
      test = await openTestDatabase(backend);
    });
    after(() => test.close());

    const service = (expectedNotifications?: ExpectedNotifications) =>
      subscriptionService({
        database: test.handle,
        clock: systemClock(),
        secretKey: null,
        dialectMode: 'auto',
        userSubscriptions: 1,
        targetGuard: defaultTargetGuard(),
        ...(expectedNotifications ? { expectedNotifications } : {}),
      });
    const body = { name: 'n', jsonpath: '$.x', target_url: 'http://127.0.0.1:9/' };

    it("reads back another instance's create, not its own", async () => {
      const expected = new ExpectedNotifications();
      const applied: SubscriptionChange[] = [];
      const refresh = subscriptionRefresh({
        database: test.handle,
        matcher: new LiveMatcher(),
        apply: (change) => applied.push(change),
        clock: systemClock(),
        windowUs: 0,
        onError: (error) => assert.fail(String(error)),
        expected,
      });
      const own = (await service(expected).create('alice', body)).uuid;
      assert.equal(expected.size, 1, 'expected from before it was sent');
      const refused = await service(expected)
        .create('alice', body)
        .then(
          () => 'stored',
          (error: { code?: string }) => error.code,
        );
      assert.equal(refused, 'SUBSCRIPTION_LIMIT');
      assert.equal(expected.size, 1, 'the refused create is not expected');
      const other = (await service().create('bob', body)).uuid;

      refresh.notified(own);
      refresh.notified(other);
      await refresh.settled();
      assert.deepEqual(
        applied.map((change) => (change.kind === 'upsert' ? change.row.uuid : change.uuid)),
        [other],
      );
      assert.equal(expected.size, 0);

      refresh.notified(own);
      await refresh.settled();
      assert.equal(applied.length, 2, 'a later notification of it is read');
    });

    it('polls first for what was written since the load began, however long ago that was', async () => {
      const now = 1_800_000_000_000_000;
      const minute = 60_000_000;
      // Written by another instance a minute before this one finished loading, after its load had read the table.
      const meanwhile = subscriptionRow({ uuid: '00000000-0000-0000-0000-0000000000aa', updated: now - minute });
      await insertSubscription(test.handle.db, test.handle.capabilities, meanwhile);
      const polled = async (since?: number) => {
        const applied: string[] = [];
        const refresh = subscriptionRefresh({
          database: test.handle,
          matcher: new LiveMatcher(),
          apply: (change) => applied.push(change.kind === 'upsert' ? change.row.uuid : change.uuid),
          clock: () => now,
          windowUs: 10_000_000,
          onError: (error) => assert.fail(String(error)),
          ...(since === undefined ? {} : { since }),
        });
        await refresh.poll();
        return applied.includes(meanwhile.uuid);
      };
      assert.equal(await polled(now - 2 * minute), true, 'the load began two minutes before');
      assert.equal(await polled(), false, 'without it, the poll reaches back only the window');
    });
  });
}
