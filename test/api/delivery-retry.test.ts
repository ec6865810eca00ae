/**
 * `POST /eventmatch/{uuid}/deliveries/{elm}/retry` over HTTP, on seeded rows: who may retry,
 * what is refused, and what a retry does to the row (the runners' part is in
 * test/e2e/delivery-control.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { buildApp } from '../../src/api/app.js';
import { deliveriesRoutes } from '../../src/api/deliveries-routes.js';
import { logEvent } from '../../src/db/stores/events.js';
import { recordAttempts } from '../../src/db/stores/matches.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchesTable, MatchState } from '../../src/db/tables.js';
import type { DeliveryRecord } from '../../src/subscriptions/delivery-history.js';
import { describeOn, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';
import { appOn } from '../support/app.js';

/** The service's clock here: fixed, so leases and due times can be said exactly (µs). */
const NOW = 1_700_000_000_000_000;
const SECOND = 1_000_000;
const as = (user: string) => ({ 'http-remote-user': user });

for (const backend of testBackends()) {
  describeOn(backend, `POST /eventmatch/{uuid}/deliveries/{elm}/retry (${backend.name})`, () => {
    const app = appOn(backend, (db) =>
      buildApp({ maxBodyBytes: 1024 * 1024, logger: 'silent', version: 'test' }, [
        deliveriesRoutes({
          database: db,
          clock: () => NOW,
          identity: { header: 'http-remote-user', defaultUser: null },
          onRequeued: () => void woken++,
        }),
      ]),
    );
    let woken = 0;

    async function subscription(owner = 'alice', fields: { disabled?: number; deleted?: number } = {}): Promise<string> {
      const row = subscriptionRow({ owner, ...fields });
      await insertSubscription(app.handle.db, app.handle.capabilities, row);
      return row.uuid;
    }

    async function match(subscriptionUuid: string, state: MatchState, fields: Partial<MatchesTable> = {}): Promise<string> {
      const event = randomUUID();
      const uuid = randomUUID();
      const created = NOW - 60 * SECOND;
      await logEvent(
        app.handle.db,
        { uuid: event, source: '/seeded', event_id: `id-${event}`, type: 't', spec_version: '1.0', body: '{}', received: created },
        [
          matchRow({
            uuid,
            event_uuid: event,
            subscription_uuid: subscriptionUuid,
            state,
            policy_code: 200,
            target_code: state === 'failed' ? 400 : 200,
            created,
            attempts: 3,
            ...fields,
          }),
        ],
      );
      return uuid;
    }

    const retry = (user: string, subscriptionUuid: string, elm: string) =>
      app.inject({ method: 'POST', url: `/eventmatch/${subscriptionUuid}/deliveries/${elm}/retry`, headers: as(user) });
    const row = (uuid: string) => app.handle.db.selectFrom('matches').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();
    const code = (response: { json: <T>() => T }) => response.json<{ code: string }>().code;

    it('queues a delivery again whatever its state: 202 with it as the history shows it, due now, its attempts kept', async () => {
      const uuid = await subscription();
      for (const state of ['delivered', 'failed', 'denied', 'cancelled', 'deliver', 'policy'] as const) {
        const elm = await match(uuid, state, state === 'deliver' ? { due: NOW + 3_600 * SECOND } : {});
        await recordAttempts(app.handle.db, app.handle.capabilities, [
          { matchUuid: elm, stage: 'deliver', at: NOW - 30 * SECOND, status: 400, error: null, durationMs: 5 },
        ]);
        const before = woken;
        const response = await retry('alice', uuid, elm);
        assert.equal(response.statusCode, 202, `${state}: ${response.body}`);
        const record = response.json<DeliveryRecord>();
        assert.deepEqual(Object.keys(record), ['elm', 'event', 'created', 'state', 'policy', 'target', 'attempts']);
        assert.equal(record.elm, elm);
        assert.equal(record.state, 'policy', state);
        assert.equal(record.attempts.length, 1, 'the attempts made before stay in its history');
        const stored = await row(elm);
        assert.deepEqual([stored.state, stored.due, stored.attempts, stored.locked_by], ['policy', NOW, 0, null], state);
        assert.equal(woken, before + 1, 'the runners are told');
        const listed = (await app.inject({ method: 'GET', url: `/eventmatch/${uuid}/deliveries`, headers: as('alice') })).json<
          DeliveryRecord[]
        >();
        assert.deepEqual(
          listed.find((d) => d.elm === elm),
          record,
          'the same shape as an item of the history',
        );
      }
    });

    it("is 404 for anyone but the owner, an unknown or another subscription's delivery, and a deleted subscription", async () => {
      const uuid = await subscription();
      const elm = await match(uuid, 'delivered');
      const other = await subscription();
      const othersElm = await match(other, 'delivered');
      const cases: Array<[string, string, string, string]> = [
        ['mallory', uuid, elm, 'SUBSCRIPTION_NOT_FOUND'],
        ['alice', randomUUID(), elm, 'SUBSCRIPTION_NOT_FOUND'],
        ['alice', 'not-a-uuid', elm, 'SUBSCRIPTION_NOT_FOUND'],
        ['alice', uuid, randomUUID(), 'DELIVERY_NOT_FOUND'],
        ['alice', uuid, 'not-a-uuid', 'DELIVERY_NOT_FOUND'],
        ['alice', uuid, othersElm, 'DELIVERY_NOT_FOUND'],
      ];
      for (const [user, subscriptionUuid, match_, expected] of cases) {
        const response = await retry(user, subscriptionUuid, match_);
        assert.equal(response.statusCode, 404, `${user} ${subscriptionUuid} ${match_}`);
        assert.equal(code(response), expected);
      }
      const deleted = await subscription('alice', { deleted: NOW - SECOND });
      const deletedElm = await match(deleted, 'delivered');
      assert.equal(code(await retry('alice', deleted, deletedElm)), 'SUBSCRIPTION_NOT_FOUND');
      assert.equal((await row(elm)).state, 'delivered', 'nothing changed');
      assert.equal((await row(othersElm)).state, 'delivered', 'nothing changed');
    });

    it('is 409 SUBSCRIPTION_DISABLED while the subscription is disabled, and changes nothing', async () => {
      const uuid = await subscription('alice', { disabled: NOW - SECOND });
      const elm = await match(uuid, 'failed');
      const response = await retry('alice', uuid, elm);
      assert.equal(response.statusCode, 409);
      assert.equal(code(response), 'SUBSCRIPTION_DISABLED');
      assert.match(response.json<{ message: string }>().message, /enable it first/);
      assert.equal((await row(elm)).state, 'failed');
    });

    it('leaves a delivery under a live lease to its holder: 409 DELIVERY_IN_PROGRESS with Retry-After; an expired lease is taken over', async () => {
      const uuid = await subscription();
      const held = await match(uuid, 'deliver', { locked_until: NOW + 10 * SECOND, locked_by: 'another-instance', attempts: 1 });
      const response = await retry('alice', uuid, held);
      assert.equal(response.statusCode, 409);
      assert.equal(code(response), 'DELIVERY_IN_PROGRESS');
      assert.equal(response.headers['retry-after'], '1');
      const untouched = await row(held);
      assert.deepEqual([untouched.state, untouched.locked_by, untouched.attempts], ['deliver', 'another-instance', 1]);

      const expired = await match(uuid, 'deliver', { locked_until: NOW - SECOND, locked_by: 'a-dead-instance' });
      assert.equal((await retry('alice', uuid, expired)).statusCode, 202);
      const taken = await row(expired);
      assert.deepEqual([taken.state, taken.locked_by, taken.locked_until], ['policy', null, null]);
    });
  });
}
