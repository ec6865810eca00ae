/**
 * The delivery stage against a real database, the real target client and a real HTTP server
 * on 127.0.0.1: how each answer settles a match and its subscription.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { logEvent, pendingMatch } from '../../src/db/events.js';
import { insertSubscription, type SubscriptionRow } from '../../src/db/subscriptions.js';
import { addressGuard } from '../../src/delivery/address-guard.js';
import { createTargetClient } from '../../src/delivery/target-client.js';
import { deliveryStep } from '../../src/routing/delivery-stage.js';
import { sealSecret } from '../../src/subscriptions/secret-box.js';
import { systemClock } from '../../src/time/clock.js';
import { openTestDatabase, testBackends } from '../support/database.js';
import { startStub } from '../support/http-stub.js';

for (const backend of testBackends()) {
  describe(`delivery stage (${backend.name})`, () => {
    async function scenario(
      targetUrl: (stubUrl: string) => string,
      answer: (eventId: string) => { status: number; body?: string },
      events: Array<{ id: string; targetCode?: number; attempts?: number }>,
      deny: string[] = [],
    ) {
      const t = await openTestDatabase(backend);
      const stub = await startStub((request, response) => {
        const { status, body } = answer((JSON.parse(request.body) as { id: string }).id);
        response.writeHead(status).end(body ?? '');
      });
      const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny }) });
      const subscription: SubscriptionRow = {
        uuid: randomUUID(), owner: 'alice', name: 'n', jsonpath: '$', dialect: 'rfc9535', target_url: targetUrl(stub.url),
        auth: '{}', extensions: '{}', version: 'v0.1', created: 1, updated: 1, deleted: null, disabled: null, error: null,
      };
      await insertSubscription(t.handle.db, subscription);
      const matches = [];
      for (const e of events) {
        const eventUuid = randomUUID();
        const match = { ...pendingMatch(eventUuid, subscription, 1), state: 'deliver' as const, target_code: e.targetCode ?? null, attempts: e.attempts ?? 0 };
        await logEvent(t.handle.db, { uuid: eventUuid, source: '/t', event_id: e.id, type: 't', spec_version: '1.0', body: JSON.stringify({ specversion: '1.0', id: e.id, source: '/t', type: 't' }), received: 1 }, [match]);
        matches.push(match);
      }
      const disabled: string[] = [];
      const step = deliveryStep({
        database: t.handle, clock: systemClock(), holder: 'test', leaseUs: 30_000_000, batchSize: 64,
        retryDelaysMs: [60_000, 60_000], random: () => 0.5, target, secretKey: null,
        onSubscriptionChange: (change) => disabled.push(change.kind === 'upsert' ? change.row.uuid : change.uuid),
      });
      assert.equal(await step(), events.length);
      const rows = await Promise.all(matches.map((m) => t.handle.db.selectFrom('matches').selectAll().where('uuid', '=', m.uuid).executeTakeFirstOrThrow()));
      const stored = await t.handle.db.selectFrom('subscriptions').selectAll().where('uuid', '=', subscription.uuid).executeTakeFirstOrThrow();
      await target.close();
      await stub.close();
      await t.close();
      return { rows, stored, disabled };
    }

    it('a permanent failure disables the subscription without touching the other rows of its batch', async () => {
      const { rows, stored, disabled } = await scenario((url) => url, (id) => (id === 'bad' ? { status: 400, body: 'no' } : { status: 200 }), [
        { id: 'bad' },
        { id: 'good' },
      ]);
      assert.deepEqual(rows.map((r) => [r.state, r.target_code]), [['failed', 400], ['delivered', 200]]);
      assert.notEqual(stored.disabled, null);
      assert.match(stored.error ?? '', /^target answered 400/);
      assert.deepEqual(disabled, [stored.uuid]);
    });

    it('a target in a denied range fails at once and disables the subscription, without a connection', async () => {
      let connections = 0;
      const { rows, stored } = await scenario(
        (url) => url.replace('127.0.0.1', 'localhost'),
        () => (connections++, { status: 200 }),
        [{ id: 'e' }],
        ['127.0.0.0/8', '::1/128'],
      );
      assert.equal(connections, 0);
      assert.deepEqual([rows[0]!.state, rows[0]!.target_code], ['failed', null]);
      assert.match(stored.error ?? '', /denied by NOTIFICATIONS_TARGET_DENY/);
    });

    it("keeps the target's last HTTP status when an attempt gets none", async () => {
      const { rows } = await scenario(() => 'http://127.0.0.1:1/refused', () => ({ status: 200 }), [{ id: 'e', targetCode: 500, attempts: 1 }]);
      assert.deepEqual([rows[0]!.state, rows[0]!.target_code, rows[0]!.attempts], ['deliver', 500, 2]);
    });

    it('a row whose credentials cannot be opened fails alone, without a request; the rest of its batch is delivered', async () => {
      const t = await openTestDatabase(backend);
      const stub = await startStub();
      const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
      try {
        const base: SubscriptionRow = {
          uuid: '', owner: 'alice', name: 'n', jsonpath: '$', dialect: 'rfc9535', target_url: stub.url,
          auth: '{}', extensions: '{}', version: 'v0.1', created: 1, updated: 1, deleted: null, disabled: null, error: null,
        };
        const sealed = { ...base, uuid: randomUUID(), auth: sealSecret('{"type":"header","header":{"type":"Bearer","credentials":"x"}}', randomBytes(32)) };
        const plain = { ...base, uuid: randomUUID() };
        await insertSubscription(t.handle.db, sealed);
        await insertSubscription(t.handle.db, plain);
        const matches = [];
        for (const subscription of [sealed, plain, sealed]) {
          const eventUuid = randomUUID();
          const match = { ...pendingMatch(eventUuid, subscription, 1), state: 'deliver' as const };
          await logEvent(t.handle.db, { uuid: eventUuid, source: '/t', event_id: eventUuid, type: 't', spec_version: '1.0', body: '{"specversion":"1.0"}', received: 1 }, [match]);
          matches.push(match);
        }
        const step = deliveryStep({
          database: t.handle, clock: systemClock(), holder: 'test', leaseUs: 30_000_000, batchSize: 64,
          retryDelaysMs: [60_000], random: () => 0.5, target, secretKey: randomBytes(32), onSubscriptionChange: () => undefined,
        });
        assert.equal(await step(), 3);
        const states = await Promise.all(matches.map(async (m) => {
          const row = await t.handle.db.selectFrom('matches').selectAll().where('uuid', '=', m.uuid).executeTakeFirstOrThrow();
          const attempts = await t.handle.db.selectFrom('attempts').select(['status', 'error']).where('match_uuid', '=', m.uuid).execute();
          return [row.state, row.locked_by, attempts.map((a) => a.status ?? a.error)];
        }));
        const notSent = /^not sent: stored target credentials are encrypted; start the service with the NOTIFICATIONS_SECRET_KEY they were written with$/;
        assert.deepEqual(states[1], ['delivered', null, [200]]);
        for (const i of [0, 2]) {
          assert.deepEqual(states[i]!.slice(0, 2), ['failed', null]);
          assert.match(String((states[i]![2] as unknown[])[0]), notSent);
        }
        assert.equal(stub.requests.length, 1);
        const stored = await t.handle.db.selectFrom('subscriptions').select(['uuid', 'disabled', 'error']).where('uuid', '=', sealed.uuid).executeTakeFirstOrThrow();
        assert.notEqual(stored.disabled, null);
        assert.match(stored.error ?? '', notSent);
      } finally {
        await target.close();
        await stub.close();
        await t.close();
      }
    });

    it('a target client that throws instead of answering fails that try alone: recorded, and retried later', async () => {
      const t = await openTestDatabase(backend);
      const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
      await target.close();
      try {
        const subscription: SubscriptionRow = {
          uuid: randomUUID(), owner: 'alice', name: 'n', jsonpath: '$', dialect: 'rfc9535', target_url: 'http://127.0.0.1:9/',
          auth: '{}', extensions: '{}', version: 'v0.1', created: 1, updated: 1, deleted: null, disabled: null, error: null,
        };
        await insertSubscription(t.handle.db, subscription);
        const eventUuid = randomUUID();
        const match = { ...pendingMatch(eventUuid, subscription, 1), state: 'deliver' as const };
        await logEvent(t.handle.db, { uuid: eventUuid, source: '/t', event_id: 'e', type: 't', spec_version: '1.0', body: '{"specversion":"1.0"}', received: 1 }, [match]);
        const step = deliveryStep({
          database: t.handle, clock: systemClock(), holder: 'test', leaseUs: 30_000_000, batchSize: 64,
          retryDelaysMs: [60_000], random: () => 0.5, target, secretKey: null, onSubscriptionChange: () => undefined,
        });
        assert.equal(await step(), 1);
        const row = await t.handle.db.selectFrom('matches').selectAll().where('uuid', '=', match.uuid).executeTakeFirstOrThrow();
        assert.deepEqual([row.state, row.attempts, row.locked_by], ['deliver', 1, null]);
        const attempts = await t.handle.db.selectFrom('attempts').select(['status', 'error']).where('match_uuid', '=', match.uuid).execute();
        assert.deepEqual(attempts, [{ status: null, error: 'not sent: the target client is closed' }]);
      } finally {
        await t.close();
      }
    });

    it('a row whose target has no connection free in time goes back to the queue untried, and is sent later', async () => {
      const t = await openTestDatabase(backend);
      const stub = await startStub((_request, response) => void setTimeout(() => response.writeHead(200).end(), 200));
      // One connection; a 2 s time-out in a 2.5 s lease, 0.5 s of it kept for settling: no time to wait for a turn.
      const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 1, guard: addressGuard({ allow: [], deny: [] }) });
      try {
        const subscription: SubscriptionRow = {
          uuid: randomUUID(), owner: 'alice', name: 'n', jsonpath: '$', dialect: 'rfc9535', target_url: stub.url,
          auth: '{}', extensions: '{}', version: 'v0.1', created: 1, updated: 1, deleted: null, disabled: null, error: null,
        };
        await insertSubscription(t.handle.db, subscription);
        const matches = [];
        for (const due of [1, 2]) {
          const eventUuid = randomUUID();
          const match = { ...pendingMatch(eventUuid, subscription, due), state: 'deliver' as const };
          await logEvent(t.handle.db, { uuid: eventUuid, source: '/t', event_id: eventUuid, type: 't', spec_version: '1.0', body: '{"specversion":"1.0"}', received: 1 }, [match]);
          matches.push(match);
        }
        let now = Date.now() * 1000;
        const step = deliveryStep({
          database: t.handle, clock: () => now, holder: 'test', leaseUs: 2_500_000, batchSize: 64,
          retryDelaysMs: [60_000], random: () => 0.5, target, secretKey: null, onSubscriptionChange: () => undefined,
        });
        const read = (uuid: string) => t.handle.db.selectFrom('matches').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();
        const attempts = (uuid: string) => t.handle.db.selectFrom('attempts').select('status').where('match_uuid', '=', uuid).execute();

        assert.equal(await step(), 2);
        const [sent, busy] = [await read(matches[0]!.uuid), await read(matches[1]!.uuid)];
        assert.equal(sent.state, 'delivered');
        assert.deepEqual([busy.state, busy.attempts, busy.target_code, busy.locked_by, busy.due], ['deliver', 0, null, null, now + 1_000_000]);
        assert.deepEqual(await attempts(busy.uuid), [], 'no attempt recorded');
        assert.equal(stub.requests.length, 1);
        assert.equal(await step(), 0, 'not due again at once');

        now += 1_000_000;
        assert.equal(await step(), 1);
        assert.equal((await read(busy.uuid)).state, 'delivered');
        assert.deepEqual(await attempts(busy.uuid), [{ status: 200 }]);
        assert.equal(stub.requests.length, 2);
      } finally {
        await target.close();
        await stub.close();
        await t.close();
      }
    });

    it("keeps at most 1 KiB of what the target said in the subscription's error", async () => {
      const { stored } = await scenario((url) => url, () => ({ status: 404, body: 'x'.repeat(5_000) }), [{ id: 'e' }]);
      assert.match(stored.error ?? '', /^target answered 404 Not Found: x+/);
      assert.ok((stored.error ?? '').length <= 1024, `${stored.error?.length} characters`);
    });
  });
}
