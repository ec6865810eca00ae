import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs } from 'kysely';
import { buildApp } from '../../src/api/app.js';
import { deliveriesRoutes } from '../../src/api/deliveries-routes.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { logEvent } from '../../src/db/stores/events.js';
import { type AttemptRecord, recordAttempts } from '../../src/db/stores/matches.js';
import { deleteSubscription, insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchState } from '../../src/db/tables.js';
import type { DeliveryRecord } from '../../src/subscriptions/delivery-history.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { systemClock } from '../../src/time/clock.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';

/** 2023-11-14T22:13:20 UTC, in microseconds. */
const T0 = 1_700_000_000_000_000;
const SECOND = 1_000_000;
const DELIVERY_FIELDS = ['elm', 'event', 'created', 'state', 'policy', 'target', 'attempts'];
const ATTEMPT_FIELDS = ['at', 'stage', 'status', 'error', 'duration_ms'];

const as = (user: string) => ({ 'http-remote-user': user });

interface Seeded {
  match: string;
  event: string;
}

/** Counts the statements run through a handle, so a test can tell one query from one per row. */
function countingHandle(handle: DatabaseHandle): { handle: DatabaseHandle; statements: () => number; reset: () => void } {
  let count = 0;
  const plugin: KyselyPlugin = {
    transformQuery: (args: PluginTransformQueryArgs) => {
      count++;
      return args.node;
    },
    transformResult: async (args: PluginTransformResultArgs) => args.result,
  };
  return { handle: { ...handle, db: handle.db.withPlugin(plugin) }, statements: () => count, reset: () => (count = 0) };
}

for (const backend of testBackends()) {
  describeOn(backend, `GET /eventmatch/{uuid}/deliveries (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let counted: ReturnType<typeof countingHandle>;
    let app: FastifyInstance;
    before(async () => {
      test = await openTestDatabase(backend);
      counted = countingHandle(test.handle);
      app = await buildApp({ maxBodyBytes: 1024 * 1024, logger: 'silent', version: 'test' }, [
        deliveriesRoutes({ database: counted.handle, clock: systemClock(), identity: { header: 'http-remote-user', defaultUser: null } }),
      ]);
    });
    after(async () => {
      await app.close();
      await test.close();
    });

    async function subscription(owner: string): Promise<string> {
      const uuid = randomUUID();
      await insertSubscription(
        test.handle.db,
        test.handle.capabilities,
        subscriptionRow({
          uuid,
          owner,
          name: 'seeded',
          jsonpath: '$.data',
          target_url: 'http://127.0.0.1:9/hook',
          created: T0 - SECOND,
          updated: T0 - SECOND,
        }),
      );
      return uuid;
    }

    async function match(
      subscriptionUuid: string,
      owner: string,
      created: number,
      fields: { state?: MatchState; policy?: number | null; target?: number | null } = {},
    ): Promise<Seeded> {
      const event = randomUUID();
      const uuid = randomUUID();
      await logEvent(
        test.handle.db,
        {
          uuid: event,
          source: '/seeded',
          event_id: `id-${event}`,
          type: 'org.example.seeded',
          spec_version: '1.0',
          body: '{}',
          received: created,
        },
        [
          matchRow({
            uuid,
            event_uuid: event,
            subscription_uuid: subscriptionUuid,
            owner,
            state: fields.state ?? 'policy',
            policy_code: fields.policy ?? null,
            target_code: fields.target ?? null,
            created,
          }),
        ],
      );
      return { match: uuid, event };
    }

    const attempt = (matchUuid: string, at: number, fields: Partial<AttemptRecord> = {}): AttemptRecord => ({
      matchUuid,
      stage: 'deliver',
      at,
      status: 200,
      error: null,
      durationMs: 12,
      ...fields,
    });

    const get = (user: string | undefined, subscriptionUuid: string, query = '') =>
      app.inject({ method: 'GET', url: `/eventmatch/${subscriptionUuid}/deliveries${query}`, headers: user === undefined ? {} : as(user) });

    async function deliveries(user: string, subscriptionUuid: string, query = ''): Promise<DeliveryRecord[]> {
      const response = await get(user, subscriptionUuid, query);
      assert.equal(response.statusCode, 200, response.body);
      return response.json<DeliveryRecord[]>();
    }

    it('answers each match with its event, codes, state and attempts, in the documented shape', async () => {
      const sub = await subscription('alice');
      const seeded = await match(sub, 'alice', T0 + 123_456, { state: 'delivered', policy: 200, target: 200 });
      await recordAttempts(test.handle.db, test.handle.capabilities, [
        attempt(seeded.match, T0 + 2 * SECOND, {
          stage: 'policy',
          status: 503,
          error: 'policy service answered 503 Service Unavailable',
          durationMs: 4.4,
        }),
        attempt(seeded.match, T0 + 3 * SECOND, { status: null, error: 'time-out after 300 ms', durationMs: 300 }),
        attempt(seeded.match, T0 + 4 * SECOND + 7, { status: 200, durationMs: 9 }),
      ]);
      const answer = await deliveries('alice', sub);
      assert.deepEqual(answer, [
        {
          elm: seeded.match,
          event: { uuid: seeded.event, id: `id-${seeded.event}`, type: 'org.example.seeded', source: '/seeded' },
          created: '2023-11-14T22:13:20.123456',
          state: 'delivered',
          policy: 200,
          target: 200,
          attempts: [
            {
              at: '2023-11-14T22:13:22.000000',
              stage: 'policy',
              status: 503,
              error: 'policy service answered 503 Service Unavailable',
              duration_ms: 4,
            },
            { at: '2023-11-14T22:13:23.000000', stage: 'deliver', status: null, error: 'time-out after 300 ms', duration_ms: 300 },
            { at: '2023-11-14T22:13:24.000007', stage: 'deliver', status: 200, error: null, duration_ms: 9 },
          ],
        },
      ]);
      assert.deepEqual(Object.keys(answer[0]!), DELIVERY_FIELDS);
      assert.deepEqual(Object.keys(answer[0]!.event), ['uuid', 'id', 'type', 'source']);
      for (const a of answer[0]!.attempts) assert.deepEqual(Object.keys(a), ATTEMPT_FIELDS);
    });

    it('shows a match not yet decided with null codes and no attempts, and the uuid in any case', async () => {
      const sub = await subscription('alice');
      const seeded = await match(sub, 'alice', T0);
      const [only, ...rest] = await deliveries('alice', sub.toUpperCase());
      assert.deepEqual(rest, []);
      assert.deepEqual(
        { ...only, event: undefined },
        {
          elm: seeded.match,
          event: undefined,
          created: '2023-11-14T22:13:20.000000',
          state: 'policy',
          policy: null,
          target: null,
          attempts: [],
        },
      );
    });

    it('lists newest first, attempts oldest first, each under its own match', async () => {
      const sub = await subscription('orderly');
      const other = await subscription('orderly');
      // Written out of order on purpose.
      const middle = await match(sub, 'orderly', T0 + 2 * SECOND, { state: 'deliver', policy: 200, target: 500 });
      const oldest = await match(sub, 'orderly', T0 + 1 * SECOND, { state: 'denied', policy: 403 });
      const newest = await match(sub, 'orderly', T0 + 3 * SECOND, { state: 'failed', policy: 200, target: 410 });
      const elsewhere = await match(other, 'orderly', T0 + 4 * SECOND);
      await recordAttempts(test.handle.db, test.handle.capabilities, [
        attempt(middle.match, T0 + 9 * SECOND, { status: 500 }),
        attempt(newest.match, T0 + 8 * SECOND, { status: 410 }),
        attempt(middle.match, T0 + 5 * SECOND, { status: 502 }),
        attempt(middle.match, T0 + 7 * SECOND, { status: null, error: 'connection refused' }),
        attempt(elsewhere.match, T0 + 6 * SECOND),
      ]);
      const answer = await deliveries('orderly', sub);
      assert.deepEqual(
        answer.map((d) => d.elm),
        [newest.match, middle.match, oldest.match],
      );
      assert.deepEqual(
        answer.map((d) => d.state),
        ['failed', 'deliver', 'denied'],
      );
      assert.deepEqual(
        answer.map((d) => [d.policy, d.target]),
        [
          [200, 410],
          [200, 500],
          [403, null],
        ],
      );
      assert.deepEqual(
        answer[0]!.attempts.map((a) => a.status),
        [410],
      );
      assert.deepEqual(
        answer[1]!.attempts.map((a) => [a.status, a.error]),
        [
          [502, null],
          [null, 'connection refused'],
          [500, null],
        ],
      );
      assert.deepEqual(answer[2]!.attempts, []);
      assert.deepEqual(
        (await deliveries('orderly', other)).map((d) => d.elm),
        [elsewhere.match],
        'another subscription of the same owner has its own',
      );
    });

    it('pages with limit (default 50, at most 200) and offset, in three queries whatever the page size', async () => {
      const sub = await subscription('pager');
      const seeded: Seeded[] = [];
      for (let i = 0; i < 60; i++)
        seeded.push(await match(sub, 'pager', T0 + i * SECOND, { state: 'delivered', policy: 200, target: 200 }));
      await recordAttempts(
        test.handle.db,
        test.handle.capabilities,
        seeded.flatMap((s, i) => [attempt(s.match, T0 + i * SECOND + 1, { status: 503 }), attempt(s.match, T0 + i * SECOND + 2)]),
      );
      const newestFirst = seeded.map((s) => s.match).reverse();

      counted.reset();
      const firstPage = await deliveries('pager', sub);
      assert.equal(counted.statements(), 3, 'owner check, the page of matches, their attempts');
      assert.deepEqual(
        firstPage.map((d) => d.elm),
        newestFirst.slice(0, 50),
      );
      assert.ok(firstPage.every((d) => d.attempts.length === 2));

      assert.deepEqual(
        (await deliveries('pager', sub, '?limit=10')).map((d) => d.elm),
        newestFirst.slice(0, 10),
      );
      assert.deepEqual(
        (await deliveries('pager', sub, '?limit=10&offset=10')).map((d) => d.elm),
        newestFirst.slice(10, 20),
      );
      assert.deepEqual(
        (await deliveries('pager', sub, '?offset=55')).map((d) => d.elm),
        newestFirst.slice(55),
      );
      assert.deepEqual(await deliveries('pager', sub, '?offset=60'), []);
      assert.equal((await deliveries('pager', sub, '?limit=200')).length, 60);
      assert.equal((await deliveries('pager', sub, '?limit=1')).length, 1);
    });

    it('answers 400 naming the parameter for a limit or offset out of range, and for unknown parameters', async () => {
      const sub = await subscription('alice');
      const cases: Array<[string, string]> = [
        ['?limit=0', 'querystring.limit: must be an integer from 1 to 200'],
        ['?limit=201', 'querystring.limit: must be an integer from 1 to 200'],
        ['?limit=ten', 'querystring.limit: must be an integer from 1 to 200'],
        ['?limit=-1', 'querystring.limit: must be an integer from 1 to 200'],
        ['?limit=', 'querystring.limit: must be an integer from 1 to 200'],
        ['?offset=-1', 'querystring.offset: must be an integer of at least 0'],
        ['?offset=1.5', 'querystring.offset: must be an integer of at least 0'],
        ['?page=2', 'querystring: unknown field "page"'],
      ];
      for (const [query, message] of cases) {
        const response = await get('alice', sub, query);
        assert.equal(response.statusCode, 400, `${query}: ${response.body}`);
        assert.deepEqual(response.json(), { statusCode: 400, error: 'Bad Request', code: 'QUERY_PARAMETER_INVALID', message }, query);
      }
    });

    it('answers 401 without an identity, before anything else', async () => {
      const sub = await subscription('alice');
      for (const [headers, query] of [
        [{}, ''],
        [{ 'http-remote-user': '  ' }, ''],
        [{}, '?limit=0'],
      ] as const) {
        const response = await app.inject({ method: 'GET', url: `/eventmatch/${sub}/deliveries${query}`, headers });
        assert.equal(response.statusCode, 401);
        assert.deepEqual(response.json(), {
          statusCode: 401,
          error: 'Unauthorized',
          code: 'UNAUTHENTICATED',
          message: 'missing identity: the Http-Remote-User header is required',
        });
      }
      assert.equal((await get(undefined, 'not-a-uuid')).statusCode, 401);
    });

    it('answers the same 404 for a missing, malformed or foreign subscription, and never shows its matches', async () => {
      const bobs = await subscription('bob');
      const seeded = await match(bobs, 'bob', T0);
      for (const uuid of [randomUUID(), 'not-a-uuid', `${bobs}x`, bobs, bobs.toUpperCase()]) {
        const response = await get('alice', uuid);
        assert.equal(response.statusCode, 404, `${uuid}: ${response.body}`);
        assert.deepEqual(response.json(), {
          statusCode: 404,
          error: 'Not Found',
          code: 'SUBSCRIPTION_NOT_FOUND',
          message: `subscription ${uuid} not found`,
        });
      }
      assert.deepEqual(
        (await deliveries('bob', bobs)).map((d) => d.elm),
        [seeded.match],
        'the owner sees them',
      );
    });

    it("keeps a deleted subscription's history readable by its owner only", async () => {
      const sub = await subscription('carol');
      const seeded = await match(sub, 'carol', T0, { state: 'cancelled' });
      assert.ok(await deleteSubscription(test.handle.db, test.handle.capabilities, 'carol', sub, T0 + SECOND));
      assert.deepEqual(
        (await deliveries('carol', sub)).map((d) => [d.elm, d.state]),
        [[seeded.match, 'cancelled']],
      );
      const stranger = await get('mallory', sub);
      assert.equal(stranger.statusCode, 404);
      assert.deepEqual(stranger.json(), {
        statusCode: 404,
        error: 'Not Found',
        code: 'SUBSCRIPTION_NOT_FOUND',
        message: `subscription ${sub} not found`,
      });
    });

    it('answers an empty array for a subscription that never matched', async () => {
      assert.deepEqual(await deliveries('dave', await subscription('dave')), []);
    });

    it('is described in /openapi.json with its parameters and record', async () => {
      const response = await app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(response.statusCode, 200);
      interface Operation {
        parameters?: Array<{ in: string; name: string }>;
        responses: Record<
          string,
          {
            content?: Record<
              string,
              { schema: { items?: { properties?: Record<string, { items?: { properties?: Record<string, unknown> } }> } } }
            >;
          }
        >;
      }
      const operation = response.json<{ paths: Record<string, Record<string, Operation>> }>().paths['/eventmatch/{uuid}/deliveries']?.get;
      assert.ok(operation, 'GET /eventmatch/{uuid}/deliveries is listed');
      assert.deepEqual((operation.parameters ?? []).map((p) => `${p.in}:${p.name}`).sort(), [
        'header:http-remote-user',
        'path:uuid',
        'query:limit',
        'query:offset',
      ]);
      const item = operation.responses['200']!.content!['application/json']!.schema.items!;
      assert.deepEqual(Object.keys(item.properties ?? {}), DELIVERY_FIELDS);
      assert.deepEqual(Object.keys(item.properties?.attempts?.items?.properties ?? {}), ATTEMPT_FIELDS);

      const event = response.json<{ paths: Record<string, Record<string, Operation>> }>().paths['/eventmatch/{uuid}/deliveries/{elm}/event']
        ?.get;
      assert.ok(event, 'GET /eventmatch/{uuid}/deliveries/{elm}/event is listed');
      assert.deepEqual((event.parameters ?? []).map((p) => `${p.in}:${p.name}`).sort(), [
        'header:http-remote-user',
        'path:elm',
        'path:uuid',
      ]);
      assert.deepEqual(Object.keys(event.responses).sort(), ['200', '400', '401', '404', '500', '503']);
    });
  });
}
