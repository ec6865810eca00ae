import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { Keyring } from '../../src/config/keyring.js';
import type { MatchState, SubscriptionRow } from '../../src/db/tables.js';
import { ServiceError } from '../../src/errors.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { type SubscriptionChange, type SubscriptionServiceDependencies, subscriptionService } from '../../src/subscriptions/service.js';
import { targetConsent } from '../../src/subscriptions/target-consent.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { AT_LIMITS, overLimits } from '../support/subscription-limits.js';
import { defaultTargetGuard } from '../support/target-guard.js';
import { matchRow } from '../support/match-row.js';

const valid = { name: 'n', jsonpath: '$.data', target_url: 'https://example.org/hook' };
const AMBIGUOUS = '$.data[*][?(@.size > 100)].name';

for (const backend of testBackends()) {
  describeOn(backend, `subscription service (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    before(async () => {
      test = await openTestDatabase(backend);
    });
    after(async () => test.close());

    const service = (overrides: Partial<SubscriptionServiceDependencies> = {}) => {
      let now = 1_700_000_000_000_000;
      return subscriptionService({
        database: test.handle,
        clock: () => ++now,
        secretKey: null,
        dialectMode: 'auto',
        userSubscriptions: 1000,
        targetGuard: defaultTargetGuard(),
        ...overrides,
      });
    };
    const rowOf = (uuid: string) =>
      test.handle.db.selectFrom('subscriptions').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();
    const findRow = (uuid: string) => test.handle.db.selectFrom('subscriptions').selectAll().where('uuid', '=', uuid).executeTakeFirst();

    it('cancels the pending matches of a deleted subscription, and leaves finished ones alone', async () => {
      const subscriptions = service();
      const created = await subscriptions.create('alice', valid);
      const other = await subscriptions.create('alice', valid);
      const event = { uuid: randomUUID(), source: '/s', event_id: randomUUID(), type: 't', spec_version: '1.0', body: '{}', received: 1 };
      await test.handle.db.insertInto('events').values(event).execute();
      const match = (subscription: string, state: MatchState) =>
        matchRow({ event_uuid: event.uuid, subscription_uuid: subscription, state, locked_until: 5, locked_by: 'worker' });
      const rows = [
        match(created.uuid, 'policy'),
        match(created.uuid, 'deliver'),
        match(created.uuid, 'delivered'),
        match(other.uuid, 'deliver'),
      ];
      await test.handle.db.insertInto('matches').values(rows).execute();
      await subscriptions.remove('alice', created.uuid);
      const states = await test.handle.db.selectFrom('matches').select(['uuid', 'state', 'locked_by']).execute();
      const stateOf = (uuid: string) => states.find((r) => r.uuid === uuid);
      assert.deepEqual(
        rows.map((r) => stateOf(r.uuid)?.state),
        ['cancelled', 'cancelled', 'delivered', 'deliver'],
      );
      assert.equal(stateOf(rows[0]!.uuid)?.locked_by, null, 'a cancelled row is released');
    });

    it('disabling cancels pending matches as deleting does; re-enabling leaves them cancelled', async () => {
      const subscriptions = service();
      const created = await subscriptions.create('alice', valid);
      const event = { uuid: randomUUID(), source: '/s', event_id: randomUUID(), type: 't', spec_version: '1.0', body: '{}', received: 1 };
      await test.handle.db.insertInto('events').values(event).execute();
      const pending = matchRow({ event_uuid: event.uuid, subscription_uuid: created.uuid, state: 'deliver', policy_code: 200 });
      await test.handle.db.insertInto('matches').values(pending).execute();
      await subscriptions.update('alice', created.uuid, { name: 'renamed' });
      const stateNow = async () =>
        (await test.handle.db.selectFrom('matches').select('state').where('uuid', '=', pending.uuid).executeTakeFirstOrThrow()).state;
      assert.equal(await stateNow(), 'deliver', 'other changes leave pending work alone');
      await subscriptions.update('alice', created.uuid, { disabled: 'now' });
      assert.equal(await stateNow(), 'cancelled');
      await subscriptions.update('alice', created.uuid, { disabled: null });
      assert.equal(await stateNow(), 'cancelled');
    });

    it('tells onChange of every successful write, after it is committed, and of nothing else', async () => {
      const changes: SubscriptionChange[] = [];
      const reads: Array<Promise<SubscriptionRow | undefined>> = [];
      const subscriptions = service({
        onChange: (change) => {
          changes.push(change);
          if (change.kind === 'upsert') reads.push(findRow(change.row.uuid));
        },
      });
      const created = await subscriptions.create('alice', valid);
      const updated = await subscriptions.update('alice', created.uuid, { name: 'renamed' });
      await subscriptions.get('alice', created.uuid);
      await subscriptions.list('alice', { limit: 10, offset: 0 });
      subscriptions.tryExpression({ jsonpath: '$', event: {} });
      await subscriptions.trySubscription('alice', created.uuid, {});
      await assert.rejects(subscriptions.update('alice', created.uuid, { name: '' }), ServiceError);
      await assert.rejects(subscriptions.update('bob', created.uuid, { name: 'x' }), ServiceError);
      await subscriptions.remove('alice', created.uuid);
      await assert.rejects(subscriptions.remove('alice', created.uuid), ServiceError);

      assert.deepEqual(
        changes.map((c) => c.kind),
        ['upsert', 'upsert', 'delete'],
      );
      const [first, second, third] = changes;
      assert.ok(first?.kind === 'upsert' && second?.kind === 'upsert' && third?.kind === 'delete');
      assert.equal(first.row.uuid, created.uuid);
      assert.equal(first.row.dialect, 'rfc9535');
      assert.equal(second.row.name, 'renamed');
      assert.ok(second.row.updated > first.row.updated);
      assert.notEqual(updated.updated, created.updated);
      assert.equal(third.uuid, created.uuid);
      const seen = await Promise.all(reads);
      assert.equal(seen.length, 2);
      assert.ok(
        seen.every((row) => row !== undefined),
        'the row is readable when onChange runs',
      );
    });

    // The other limits are the route's schema's (subscriptions/fields.ts), answered in test/api/eventmatch-errors.test.ts.
    it('holds the limit a schema cannot say, on extension string values, on create and update', async () => {
      const subscriptions = service();
      const created = await subscriptions.create('alice', AT_LIMITS);
      assert.equal(created.name, AT_LIMITS.name);
      for (const [label, body, expected] of overLimits(valid).filter(([label]) => label.startsWith('extension value'))) {
        await assert.rejects(
          subscriptions.create('alice', body),
          (error: ServiceError) => error.statusCode === 400 && expected.test(error.message),
          label,
        );
        await assert.rejects(
          subscriptions.update('alice', created.uuid, body),
          (error: ServiceError) => error.statusCode === 400 && expected.test(error.message),
          label,
        );
      }
      assert.deepEqual(await subscriptions.get('alice', created.uuid), created);
    });

    it('checks target_url against the address rules when a PUT changes it, not when it sends the stored one back', async () => {
      const before = await service({ targetGuard: addressGuard({ allow: [], deny: [] }) }).create('alice', {
        ...valid,
        target_url: 'http://127.0.0.1:9/hook',
      });
      const tightened = service({ targetGuard: addressGuard({ allow: [], deny: ['127.0.0.0/8'] }) });
      const renamed = await tightened.update('alice', before.uuid, { ...before, name: 'renamed' });
      assert.equal(renamed.name, 'renamed');
      await assert.rejects(
        tightened.update('alice', before.uuid, { target_url: 'http://127.0.0.2:9/hook' }),
        (error: ServiceError) =>
          error.statusCode === 400 && error.message === 'body.target_url: address 127.0.0.2 is denied by NOTIFICATIONS_TARGET_DENY',
      );
      await assert.rejects(
        tightened.update('bob', before.uuid, { target_url: 'http://127.0.0.2:9/hook' }),
        (error: ServiceError) => error.statusCode === 404,
        "someone else's: 404 first",
      );
      assert.equal((await tightened.get('alice', before.uuid)).target_url, 'http://127.0.0.1:9/hook');
    });

    it('a broker target_url: its host is judged by the address rules, no consent is asked, and credentials must be basic', async () => {
      const broker = 'amqp://127.0.0.1:5672/?routing_key=q';
      await assert.rejects(
        service({ targetGuard: addressGuard({ allow: [], deny: ['127.0.0.0/8'] }) }).create('alice', { ...valid, target_url: broker }),
        (error: ServiceError) =>
          error.statusCode === 400 && error.message === 'body.target_url: address 127.0.0.1 is denied by NOTIFICATIONS_TARGET_DENY',
      );
      // The handshake is HTTP's: asked of an amqp URL, it could only fail.
      const asking = service({ targetConsent: targetConsent({ origin: 'me', timeoutMs: 1_000, guard: defaultTargetGuard() }) });
      const created = await asking.create('alice', { ...valid, target_url: broker });
      assert.equal((await rowOf(created.uuid)).allowed_rate, null);

      const header = { type: 'header', header: { type: 'Bearer', credentials: 't' } };
      const basic = { type: 'basic', basic: { username: 'publisher', password: 'p' } };
      const refusesHeader = (error: ServiceError) =>
        error.statusCode === 400 && error.message.startsWith('body.auth.type: must be "basic"');
      await assert.rejects(asking.update('alice', created.uuid, { auth: header }), refusesHeader);
      const http = await service().create('alice', { ...valid, auth: header });
      await assert.rejects(asking.update('alice', http.uuid, { target_url: broker }), refusesHeader, 'the stored header with a broker URL');
      const moved = await asking.update('alice', http.uuid, { target_url: broker, auth: basic });
      assert.equal(moved.target_url, broker);
    });

    it('moves updated strictly forward even when the clock stands still', async () => {
      const frozen = subscriptionService({
        database: test.handle,
        clock: () => 1_700_000_000_000_000,
        secretKey: null,
        dialectMode: 'auto',
        userSubscriptions: 1000,
        targetGuard: defaultTargetGuard(),
      });
      const created = await frozen.create('alice', valid);
      const stamps = [created.updated];
      for (let i = 0; i < 5; i++) stamps.push((await frozen.update('alice', created.uuid, {})).updated);
      for (let i = 1; i < stamps.length; i++) assert.ok(stamps[i]! > stamps[i - 1]!, `${stamps[i]} after ${stamps[i - 1]}`);
      const deleted = await frozen.remove('alice', created.uuid);
      assert.ok(deleted.deleted! > stamps.at(-1)!);
      assert.ok(deleted.updated > stamps.at(-1)!);
    });

    it('disables at the clock reading and re-enables with null', async () => {
      const subscriptions = service();
      const created = await subscriptions.create('alice', valid);
      const disabled = await subscriptions.update('alice', created.uuid, { disabled: '1999-01-01T00:00:00.000000' });
      assert.equal(disabled.disabled, disabled.updated);
      assert.equal((await rowOf(created.uuid)).disabled, (await rowOf(created.uuid)).updated);
      const enabled = await subscriptions.update('alice', created.uuid, { disabled: null });
      assert.equal(enabled.disabled, null);
    });

    it('keeps the stored dialect unless the expression changes', async () => {
      const migrating = service({ dialectMode: 'jsonpath2-first' });
      const created = await migrating.create('alice', { ...valid, jsonpath: AMBIGUOUS });
      assert.equal((await rowOf(created.uuid)).dialect, 'jsonpath2');
      const standard = service({ dialectMode: 'auto' });
      await standard.update('alice', created.uuid, { name: 'renamed', target_url: 'http://127.0.0.1/' });
      assert.equal((await rowOf(created.uuid)).dialect, 'jsonpath2');
      const event = { data: [{ size: 500, name: 'large', meta: { size: 1000, name: 'inner' } }] };
      assert.deepEqual(await standard.trySubscription('alice', created.uuid, event), {
        matches: true,
        dialect: 'jsonpath2',
        values: ['large'],
        paths: ["$['data'][0]['name']"],
      });
      // Sent back as stored (a record PUT back as read): neither compiled again nor changed.
      await standard.update('alice', created.uuid, { ...(await standard.get('alice', created.uuid)), name: 'again' });
      await standard.update('alice', created.uuid, { jsonpath: AMBIGUOUS });
      assert.deepEqual([(await rowOf(created.uuid)).jsonpath, (await rowOf(created.uuid)).dialect], [AMBIGUOUS, 'jsonpath2']);
      assert.deepEqual((await standard.trySubscription('alice', created.uuid, event)).values, ['large']);
      // Stored as jsonpath2 and sent back where only RFC 9535 is read: kept, not refused.
      const strict = service({ dialectMode: 'rfc9535' });
      const pacifica = await migrating.create('alice', { ...valid, jsonpath: '$.data[?(@.size = 1)]' });
      await strict.update('alice', pacifica.uuid, { ...pacifica, name: 'renamed' });
      assert.equal((await rowOf(pacifica.uuid)).dialect, 'jsonpath2');
      // Another text is a new expression, compiled with the setting in force.
      await standard.update('alice', created.uuid, { jsonpath: AMBIGUOUS.replace(' > ', '>') });
      assert.equal((await rowOf(created.uuid)).dialect, 'rfc9535', 'rewritten: compiled with the setting in force');
      assert.deepEqual((await standard.trySubscription('alice', created.uuid, event)).values, ['inner']);
    });

    it('enables without a new expression only when the stored one compiles in its dialect', async () => {
      const subscriptions = service();
      const tooLong = `$.data[?@.name == '${'x'.repeat(3_000)}']`;
      const row = await rowOf((await subscriptions.create('alice', { ...valid, disabled: true })).uuid);
      await test.handle.db.updateTable('subscriptions').set({ jsonpath: tooLong }).where('uuid', '=', row.uuid).execute();
      for (const body of [{ disabled: null }, { disabled: null, jsonpath: tooLong, name: 'renamed' }]) {
        await assert.rejects(subscriptions.update('alice', row.uuid, body), (error: ServiceError) => {
          assert.equal(error.code, 'JSONPATH_SYNTAX');
          assert.match(
            error.message,
            /^body\.jsonpath: the stored expression does not compile in its dialect, rfc9535 \(invalid JSONPath at position 2048: .*\); send a new jsonpath with "disabled": null to enable the subscription$/,
          );
          return true;
        });
      }
      const still = await rowOf(row.uuid);
      assert.deepEqual([still.disabled, still.name, still.updated], [row.disabled, row.name, row.updated], 'nothing changed');
      // Other changes of the disabled subscription go through; a new expression enables it.
      assert.equal((await subscriptions.update('alice', row.uuid, { ...valid, name: 'kept', jsonpath: tooLong })).name, 'kept');
      const enabled = await subscriptions.update('alice', row.uuid, { disabled: null, jsonpath: '$.data' });
      assert.deepEqual([enabled.disabled, enabled.jsonpath], [null, '$.data']);
    });

    it('seals auth with the key and writes it only when sent', async () => {
      const key = new Keyring([randomBytes(32)]);
      const subscriptions = service({ secretKey: key });
      const auth = { type: 'basic', basic: { username: 'u', password: 'secret-password' } };
      const created = await subscriptions.create('alice', { ...valid, auth });
      const sealed = (await rowOf(created.uuid)).auth;
      assert.ok(sealed.startsWith('v1:') && !sealed.includes('secret-password'));
      await subscriptions.update('alice', created.uuid, { name: 'x' });
      assert.equal((await rowOf(created.uuid)).auth, sealed, 'not re-sealed when auth is not sent');
      assert.deepEqual((await subscriptions.get('alice', created.uuid)).auth, auth);
      assert.equal((await rowOf(created.uuid)).extensions, '{}');
    });

    it('stores a new subscription with its version, owner and equal created and updated', async () => {
      const created = await service().create('carol', { ...valid, uuid: 'x', user: 'mallory', disabled: true });
      const row = await rowOf(created.uuid);
      assert.equal(row.owner, 'carol');
      assert.equal(row.version, 'v0.1');
      assert.equal(row.created, row.updated);
      assert.equal(row.disabled, row.created);
      assert.equal(row.error, null);
      assert.equal(row.deleted, null);
    });
  });
}
