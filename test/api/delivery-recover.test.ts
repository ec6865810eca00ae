/**
 * `POST /eventmatch/{uuid}/deliveries/recover` over HTTP, on seeded rows: which deliveries a
 * window takes back (failed and cancelled ones of this subscription, created within it, both
 * ends included), who may ask, what is refused; then the rows it queued again going through a
 * real policy service and reaching a real target, by the runners.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { deliveriesRoutes } from '../../src/api/deliveries-routes.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { logEvent } from '../../src/db/stores/events.js';
import { recordAttempts } from '../../src/db/stores/matches.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchesTable, MatchState } from '../../src/db/tables.js';
import { createTargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { createPolicyClient } from '../../src/policy/policy-client.js';
import type { DeliveryRecord } from '../../src/subscriptions/delivery-history.js';
import { formatTimestamp, parseTimestamp, systemClock } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { startStub } from '../support/http-stub.js';
import { matchRow } from '../support/match-row.js';
import { round, testDeliveryRunner, testPolicyRunner } from '../support/runners.js';
import { subscriptionRow } from '../support/subscription-row.js';

/** The service's clock here, until the runners run: fixed, so due times can be said exactly (µs). */
const NOW = 1_700_000_000_000_000;
const SECOND = 1_000_000;
const HOUR = 3_600 * SECOND;
const as = (user: string) => ({ 'http-remote-user': user });
/** The most one recover takes here: small, so that a window over it is cheap to make. */
const LIMIT = 3;
const answer = (response: { json: <T>() => T }) => response.json<{ code: string; message: string }>();
const ALL_STATES: readonly MatchState[] = ['policy', 'deliver', 'pending', 'delivered', 'denied', 'failed', 'cancelled', 'expired'];

for (const backend of testBackends()) {
  describeOn(backend, `POST /eventmatch/{uuid}/deliveries/recover (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    let woken = 0;
    before(async () => {
      test = await openTestDatabase(backend);
      app = await buildApp({ maxBodyBytes: 1024 * 1024, logger: 'silent', version: 'test' }, [
        deliveriesRoutes({
          database: test.handle,
          clock: () => NOW,
          identity: { header: 'http-remote-user', defaultUser: null },
          onRequeued: () => void woken++,
          recoverLimit: LIMIT,
        }),
      ]);
    });
    after(async () => {
      await app.close();
      await test.close();
    });

    const { subscription, match, recover, row, state } = seeding(
      () => test.handle,
      () => app,
    );

    it('takes the failed deliveries created within the window, both ends included, to the exact microsecond', async () => {
      const uuid = await subscription();
      const since = NOW - 24 * HOUR;
      const until = NOW - HOUR;
      const before_ = await match(uuid, 'failed', since - 1);
      const first = await match(uuid, 'failed', since);
      const inside = await match(uuid, 'failed', since + 5 * HOUR);
      const last = await match(uuid, 'failed', until);
      const past = await match(uuid, 'failed', until + 1);

      const response = await recover('alice', uuid, { since: formatTimestamp(since), until: formatTimestamp(until) });
      assert.equal(response.statusCode, 202, response.body);
      assert.deepEqual(response.json(), { requeued: 3 });
      assert.deepEqual(await Promise.all([before_, first, inside, last, past].map(state)), [
        'failed',
        'policy',
        'policy',
        'policy',
        'failed',
      ]);

      // Without `until` (or with null), up to now: the one after the window too, not the one before it.
      const open = await recover('alice', uuid, { since: formatTimestamp(since), until: null });
      assert.deepEqual(open.json(), { requeued: 1 }, 'only the one left failed');
      assert.deepEqual(await Promise.all([before_, past].map(state)), ['failed', 'policy']);
    });

    it('queues them as a retry does: policy check first, due now, tries counted afresh, attempts kept; the runners are told', async () => {
      const uuid = await subscription();
      const elm = await match(uuid, 'failed', NOW - HOUR, { locked_until: NOW - SECOND, locked_by: 'a-dead-instance' });
      await recordAttempts(test.handle.db, test.handle.capabilities, [
        { matchUuid: elm, stage: 'deliver', at: NOW - HOUR + SECOND, status: 503, error: null, durationMs: 5 },
      ]);
      const before_ = woken;
      const response = await recover('alice', uuid, { since: formatTimestamp(NOW - 2 * HOUR) });
      assert.deepEqual(response.json(), { requeued: 1 });
      const stored = await row(elm);
      assert.deepEqual(
        [stored.state, stored.due, stored.attempts, stored.locked_by, stored.locked_until, stored.updated],
        ['policy', NOW, 0, null, null, NOW],
      );
      assert.equal(woken, before_ + 1, 'the policy runner is woken');
      const history = (await app.inject({ method: 'GET', url: `/eventmatch/${uuid}/deliveries`, headers: as('alice') })).json<
        DeliveryRecord[]
      >();
      assert.deepEqual(
        history.find((d) => d.elm === elm)?.attempts.map((a) => a.status),
        [503],
        'the attempt made before stays in its history',
      );

      const nothing = await recover('alice', uuid, { since: formatTimestamp(NOW - 2 * HOUR) });
      assert.deepEqual(nothing.json(), { requeued: 0 }, 'a second recover finds nothing left');
      assert.equal(woken, before_ + 1, 'nothing queued, nobody woken');
    });

    it("takes only failed and cancelled deliveries, only this subscription's, and leaves those a runner holds", async () => {
      const uuid = await subscription();
      const created = NOW - HOUR;
      const elms = new Map<MatchState, string>();
      for (const s of ALL_STATES) elms.set(s, await match(uuid, s, created));
      // Cancelled while in flight: its holder still records what came of it.
      const held = await match(uuid, 'cancelled', created, { locked_until: NOW + 10 * SECOND, locked_by: 'another-instance' });
      const sibling = await subscription();
      const siblingFailed = await match(sibling, 'failed', created);
      const others = await subscription('mallory');
      const othersFailed = await match(others, 'failed', created, {}, 'mallory');

      const response = await recover('alice', uuid, { since: formatTimestamp(created), until: formatTimestamp(created) });
      assert.deepEqual(response.json(), { requeued: 2 });
      for (const s of ALL_STATES) {
        const expected = s === 'failed' || s === 'cancelled' ? 'policy' : s;
        assert.equal(await state(elms.get(s)!), expected, `a ${s} delivery`);
      }
      const untouched = await row(held);
      assert.deepEqual([untouched.state, untouched.locked_by], ['cancelled', 'another-instance'], 'left to its holder');
      assert.equal(await state(siblingFailed), 'failed', "another subscription's, of the same owner");
      assert.equal(await state(othersFailed), 'failed', "another owner's");
    });

    it("takes a pull subscription's cancelled deliveries back (it has no failed ones)", async () => {
      const uuid = await subscription('alice', { delivery: 'pull', target_url: '' });
      const cancelled = await match(uuid, 'cancelled', NOW - HOUR, { cursor: 41 });
      const expired = await match(uuid, 'expired', NOW - HOUR);
      const response = await recover('alice', uuid, { since: formatTimestamp(NOW - 2 * HOUR) });
      assert.deepEqual(response.json(), { requeued: 1 });
      assert.equal(await state(cancelled), 'policy', 'made readable again, at a new cursor, once allowed');
      assert.equal(await state(expired), 'expired');
    });

    it('refuses a window holding more than it takes at once: 400 RECOVER_WINDOW_TOO_LARGE, and none is queued', async () => {
      const uuid = await subscription();
      const elms = [];
      for (let i = 0; i <= LIMIT; i++) elms.push(await match(uuid, i % 2 === 0 ? 'failed' : 'cancelled', NOW - (10 - i) * HOUR));
      // Neither counted nor taken: what a runner holds, and what is not failed or cancelled.
      await match(uuid, 'cancelled', NOW - HOUR, { locked_until: NOW + SECOND, locked_by: 'another-instance' });
      await match(uuid, 'delivered', NOW - HOUR);
      const before_ = woken;
      const response = await recover('alice', uuid, { since: formatTimestamp(NOW - 24 * HOUR) });
      assert.equal(response.statusCode, 400, response.body);
      assert.equal(answer(response).code, 'RECOVER_WINDOW_TOO_LARGE');
      assert.match(
        answer(response).message,
        new RegExp(`^body\\.since: the window holds ${LIMIT + 1} failed or cancelled deliveries, more than the ${LIMIT} `),
      );
      assert.deepEqual(await Promise.all(elms.map(state)), ['failed', 'cancelled', 'failed', 'cancelled'], 'none is queued');
      assert.equal(woken, before_);

      // Narrower windows, one after another, take them all.
      const middle = formatTimestamp(NOW - 8.5 * HOUR);
      assert.deepEqual((await recover('alice', uuid, { since: formatTimestamp(NOW - 24 * HOUR), until: middle })).json(), { requeued: 2 });
      assert.deepEqual((await recover('alice', uuid, { since: middle })).json(), { requeued: 2 });
      assert.deepEqual(await Promise.all(elms.map(state)), ['policy', 'policy', 'policy', 'policy']);
    });

    it('is 409 SUBSCRIPTION_DISABLED while the subscription is disabled, and changes nothing', async () => {
      const uuid = await subscription('alice', { disabled: NOW - SECOND, error: 'target answered 400' });
      const failed = await match(uuid, 'failed', NOW - HOUR);
      const cancelled = await match(uuid, 'cancelled', NOW - HOUR);
      const before_ = woken;
      const response = await recover('alice', uuid, { since: formatTimestamp(NOW - 2 * HOUR) });
      assert.equal(response.statusCode, 409);
      assert.equal(answer(response).code, 'SUBSCRIPTION_DISABLED');
      assert.match(answer(response).message, /enable it first .*then recover its deliveries/);
      assert.deepEqual(await Promise.all([failed, cancelled].map(state)), ['failed', 'cancelled']);
      assert.equal(woken, before_);
    });

    it('is 404 for anyone but the owner, an unknown or malformed uuid, and a deleted subscription; nothing changes', async () => {
      const uuid = await subscription();
      const failed = await match(uuid, 'failed', NOW - HOUR);
      const deleted = await subscription('alice', { deleted: NOW - SECOND });
      const deletedFailed = await match(deleted, 'failed', NOW - HOUR);
      const window = { since: formatTimestamp(NOW - 2 * HOUR) };
      for (const [user, subscriptionUuid] of [
        ['mallory', uuid],
        ['alice', randomUUID()],
        ['alice', 'not-a-uuid'],
        ['alice', deleted],
      ] as const) {
        const response = await recover(user, subscriptionUuid, window);
        assert.equal(response.statusCode, 404, `${user} ${subscriptionUuid}`);
        assert.equal(answer(response).code, 'SUBSCRIPTION_NOT_FOUND');
      }
      assert.deepEqual(await Promise.all([failed, deletedFailed].map(state)), ['failed', 'failed']);
    });

    it('is 400 naming the field for a window without since, a malformed time, since after until, or an unknown field', async () => {
      const uuid = await subscription();
      const failed = await match(uuid, 'failed', NOW - HOUR);
      const since = formatTimestamp(NOW - 2 * HOUR);
      const cases: Array<[string, unknown, string, RegExp]> = [
        ['no body', undefined, 'FIELD_REQUIRED', /^body\.since: required/],
        ['an empty object', {}, 'FIELD_REQUIRED', /^body\.since: required/],
        ['only until', { until: since }, 'FIELD_REQUIRED', /^body\.since: required/],
        ['since a number', { since: NOW }, 'FIELD_TYPE', /^body\.since: must be a string/],
        ['since null', { since: null }, 'FIELD_TYPE', /^body\.since: must be a string/],
        ['until a number', { since, until: 5 }, 'FIELD_TYPE', /^body\.until: must be a string or null/],
        ['an unknown field', { since, before: since }, 'FIELD_UNKNOWN', /^body: unknown field "before"/],
        ['since after until', { since, until: formatTimestamp(NOW - 3 * HOUR) }, 'FIELD_INVALID', /^body\.since: .* is after body\.until/],
        ['a malformed until', { since, until: 'now' }, 'FIELD_INVALID', /^body\.until: must be a UTC time YYYY-MM-DDTHH:MM:SS\.ffffff/],
        ['not JSON', '{"since":', 'BODY_NOT_JSON', /^body: /],
      ];
      for (const text of [
        'yesterday',
        '',
        '2026-11-23 21:23:37.304925',
        '2026-11-23T21:23:37.304925Z',
        '2026-11-23T21:23:37+01:00',
        '2026-11-23T21:23:37.3049251',
        '2026-11-23T21:23',
        '2026-13-01T00:00:00',
        '2026-02-29T00:00:00',
        '2026-11-23T24:00:00',
        '2026-11-23T21:60:00',
        '2026-11-23T21:23:60',
        '20261123T212337',
      ]) {
        cases.push([
          `since ${JSON.stringify(text)}`,
          { since: text },
          'FIELD_INVALID',
          /^body\.since: must be a UTC time YYYY-MM-DDTHH:MM:SS\.ffffff/,
        ]);
      }
      for (const [label, body, code, message] of cases) {
        const response = await recover('alice', uuid, body);
        assert.equal(response.statusCode, 400, `${label}: ${response.body}`);
        assert.equal(answer(response).code, code, label);
        assert.match(answer(response).message, message, label);
      }
      const plainText = await recover('alice', uuid, JSON.stringify({ since }), { 'content-type': 'text/plain' });
      assert.equal(plainText.statusCode, 415, 'a body that is not application/json');
      assert.equal(await state(failed), 'failed', 'nothing changed');
    });

    it('is described in /openapi.json: its body, its answer and the codes of its errors', async () => {
      interface Operation {
        parameters?: Array<{ in: string; name: string }>;
        requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown>; required?: string[] } }> };
        responses: Record<string, { content?: Record<string, { schema: { properties?: Record<string, { enum?: string[] }> } }> }>;
      }
      const paths = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, Operation>> }>()
        .paths;
      const operation = paths['/eventmatch/{uuid}/deliveries/recover']?.post;
      assert.ok(operation, 'POST /eventmatch/{uuid}/deliveries/recover is listed');
      assert.deepEqual((operation.parameters ?? []).map((p) => `${p.in}:${p.name}`).sort(), ['header:http-remote-user', 'path:uuid']);
      const body = operation.requestBody!.content['application/json']!.schema;
      assert.deepEqual([Object.keys(body.properties ?? {}), body.required], [['since', 'until'], ['since']]);
      assert.deepEqual(Object.keys(operation.responses).sort(), ['202', '400', '401', '403', '404', '409', '413', '415', '500', '503']);
      assert.deepEqual(Object.keys(operation.responses['202']!.content!['application/json']!.schema.properties ?? {}), ['requeued']);
      const codes = (status: string) => operation.responses[status]!.content!['application/json']!.schema.properties!.code!.enum ?? [];
      assert.deepEqual(codes('409'), ['SUBSCRIPTION_DISABLED']);
      for (const code of ['FIELD_REQUIRED', 'FIELD_UNKNOWN', 'FIELD_TYPE', 'FIELD_INVALID', 'BODY_NOT_JSON', 'RECOVER_WINDOW_TOO_LARGE'])
        assert.ok(codes('400').includes(code), `400 ${code}`);
      assert.deepEqual(codes('404'), ['SUBSCRIPTION_NOT_FOUND']);
    });

    it('reads a time as the history writes it, or with a shorter fraction, or none', () => {
      assert.equal(parseTimestamp(formatTimestamp(NOW + 123_456)), NOW + 123_456);
      assert.equal(parseTimestamp('2026-11-23T21:23:37'), Date.UTC(2026, 10, 23, 21, 23, 37) * 1000);
      assert.equal(parseTimestamp('2026-11-23T21:23:37.5'), Date.UTC(2026, 10, 23, 21, 23, 37) * 1000 + 500_000);
      assert.equal(parseTimestamp('2024-02-29T00:00:00.000001'), Date.UTC(2024, 1, 29) * 1000 + 1, 'a leap day');
      assert.equal(parseTimestamp('0099-01-01T00:00:00'), new Date('0099-01-01T00:00:00Z').getTime() * 1000, 'the year 99, not 1999');
    });
  });
}

for (const backend of testBackends()) {
  describeOn(backend, `recovered deliveries through the runners (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    before(async () => {
      // A database of its own: the runners take every due row in it.
      test = await openTestDatabase(backend);
      app = await buildApp({ maxBodyBytes: 1024 * 1024, logger: 'silent', version: 'test' }, [
        deliveriesRoutes({ database: test.handle, clock: systemClock(), identity: { header: 'http-remote-user', defaultUser: null } }),
      ]);
    });
    after(async () => {
      await app.close();
      await test.close();
    });
    const { subscription, match, recover, state } = seeding(
      () => test.handle,
      () => app,
    );

    it('sends what it queued again through a real policy service to a real target, and nothing else', async (t) => {
      const target = await startStub();
      const policyService = await startStub();
      const policy = createPolicyClient({ baseUrl: policyService.url, timeoutMs: 2_000 });
      const client = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
      const real = Date.now() * 1000;
      t.after(async () => {
        await client.close();
        await policy.close();
        await target.close();
        await policyService.close();
      });
      const uuid = await subscription('carol', { target_url: `${target.url}/hook` });
      const failed = [await match(uuid, 'failed', real - 2 * HOUR, {}, 'carol'), await match(uuid, 'failed', real - HOUR, {}, 'carol')];
      const cancelled = await match(uuid, 'cancelled', real - HOUR, {}, 'carol');
      const older = await match(uuid, 'failed', real - 48 * HOUR, {}, 'carol');
      const denied = await match(uuid, 'denied', real - HOUR, {}, 'carol');
      const idOf = async (elm: string) =>
        (
          await test.handle.db
            .selectFrom('matches')
            .innerJoin('events', 'events.uuid', 'matches.event_uuid')
            .select('events.event_id')
            .where('matches.uuid', '=', elm)
            .executeTakeFirstOrThrow()
        ).event_id;
      const expected = (await Promise.all([...failed, cancelled].map(idOf))).sort();

      const response = await recover('carol', uuid, { since: formatTimestamp(real - 24 * HOUR) });
      assert.deepEqual(response.json(), { requeued: 3 });

      const runners = { handle: test.handle, clock: systemClock() };
      assert.equal(await round(testPolicyRunner(runners, { policy })), 3, 'the policy runner takes the three');
      assert.deepEqual(
        policyService.requests.map((r) => [r.method, r.url]),
        expected.map(() => ['POST', '/events/carol']),
        'one policy call per event, for its owner',
      );
      assert.deepEqual(policyService.requests.map((r) => (JSON.parse(r.body) as { id: string }).id).sort(), expected);
      assert.equal(await round(testDeliveryRunner(runners, { target: client })), 3, 'the delivery runner takes the three');
      assert.deepEqual(target.requests.map((r) => (JSON.parse(r.body) as { id: string }).id).sort(), expected, 'each sent once');
      assert.deepEqual(await Promise.all([...failed, cancelled, older, denied].map(state)), [
        'delivered',
        'delivered',
        'delivered',
        'failed',
        'denied',
      ]);
    });
  });
}

/** Seeding and asking, on one database and one app. */
function seeding(handle: () => DatabaseHandle, app: () => FastifyInstance) {
  async function subscription(owner = 'alice', fields: Parameters<typeof subscriptionRow>[0] = {}): Promise<string> {
    const row = subscriptionRow({ owner, ...fields });
    await insertSubscription(handle().db, handle().capabilities, row);
    return row.uuid;
  }

  /** A delivery of `subscriptionUuid` in `state`, its event matched at `created`; its elm. */
  async function match(
    subscriptionUuid: string,
    state: MatchState,
    created: number,
    fields: Partial<MatchesTable> = {},
    owner = 'alice',
  ): Promise<string> {
    const event = randomUUID();
    const uuid = randomUUID();
    const id = `id-${event}`;
    await logEvent(
      handle().db,
      {
        uuid: event,
        source: '/seeded',
        event_id: id,
        type: 't',
        spec_version: '1.0',
        body: JSON.stringify({ specversion: '1.0', id, source: '/seeded', type: 't' }),
        received: created,
      },
      [
        matchRow({
          uuid,
          event_uuid: event,
          subscription_uuid: subscriptionUuid,
          owner,
          state,
          policy_code: 200,
          target_code: state === 'failed' ? 503 : null,
          created,
          due: created,
          updated: created,
          attempts: 7,
          ...fields,
        }),
      ],
    );
    return uuid;
  }

  const recover = (user: string, subscriptionUuid: string, body?: unknown, headers: Record<string, string> = {}) =>
    app().inject({
      method: 'POST',
      url: `/eventmatch/${subscriptionUuid}/deliveries/recover`,
      headers: { ...as(user), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  const row = (uuid: string) => handle().db.selectFrom('matches').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();
  const state = async (uuid: string) => (await row(uuid)).state;

  return { subscription, match, recover, row, state };
}
