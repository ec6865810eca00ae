/**
 * Subscription writes reach another instance's matcher through PostgreSQL NOTIFY while the poll
 * is slow (in milliseconds: the times are reported); the listener comes back after its connection
 * is killed, and without it the poll still finds every write.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { describe, it, type TestContext } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { syncSchema } from '../../src/db/migrate.js';
import { disableSubscription } from '../../src/db/stores/subscriptions.js';
import { ExpectedNotifications } from '../../src/db/expected-notifications.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { type SubscriptionSync, startSubscriptionSync } from '../../src/matching/subscription-sync.js';
import { type SubscriptionService, subscriptionService } from '../../src/subscriptions/service.js';
import { systemClock } from '../../src/time/clock.js';
import { createPostgres, describeOn, POSTGRES, POSTGRES_TEST_URL, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { defaultTargetGuard } from '../support/target-guard.js';

const SLOW_POLL_MS = 60_000;
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

interface Setup {
  handle: DatabaseHandle;
  service: SubscriptionService;
  matcher: LiveMatcher;
  sync: SubscriptionSync;
  /** What the sync did, in order: `apply` for each change it passed on, `reload` for each reload after listening was lost. */
  trail: string[];
  close(): Promise<void>;
}

/** A matcher kept in step only by the sync (writes go through a service that does not tell it). */
async function setup(
  database: TestDatabase,
  options: { listenUrl?: string; pollMs?: number; expected?: ExpectedNotifications } = {},
): Promise<Setup> {
  const handle = openDatabase(database.url);
  await syncSchema(handle);
  const clock = systemClock();
  const matcher = new LiveMatcher();
  const trail: string[] = [];
  const sync = startSubscriptionSync({
    database: handle,
    url: options.listenUrl ?? database.url,
    applicationName: 'svc-notifications listener test',
    matcher,
    apply: (change) => {
      trail.push('apply');
      matcher.apply(change);
    },
    clock,
    pollMs: options.pollMs ?? SLOW_POLL_MS,
    listeningPollMs: SLOW_POLL_MS,
    skewUs: 10_000_000,
    maxErrorPauseMs: 1_000,
    ...(options.expected ? { expected: options.expected } : {}),
    log: {
      ...quiet,
      info: (_details, message) => {
        if (message.startsWith('subscriptions reloaded')) trail.push('reload');
      },
    },
  });
  const service = subscriptionService({
    database: handle,
    clock,
    secretKey: null,
    dialectMode: 'auto',
    userSubscriptions: 1000,
    targetGuard: defaultTargetGuard(),
  });
  return {
    handle,
    service,
    matcher,
    sync,
    trail,
    close: async () => {
      await sync.stop();
      await handle.close();
      await database.cleanup();
    },
  };
}

const matched = (matcher: LiveMatcher, uuid: string) => matcher.match({ x: 1 }).some((m) => m.uuid === uuid);

/**
 * How long until the matcher says `expected` about `uuid` (ms); fails after `limitMs`. Most come
 * within milliseconds (reported); the limit is only what a loaded machine may take, and stays far
 * below the minute poll, so that what comes in time came by NOTIFY.
 */
async function propagation(matcher: LiveMatcher, uuid: string, expected: boolean, limitMs = 10_000): Promise<number> {
  const start = performance.now();
  while (performance.now() - start < limitMs) {
    if (matched(matcher, uuid) === expected) return performance.now() - start;
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error(`the matcher did not ${expected ? 'take up' : 'drop'} ${uuid} within ${limitMs} ms`);
}

const create = async (service: SubscriptionService) =>
  (await service.create('alice', { name: 'n', jsonpath: '$.x', target_url: 'http://127.0.0.1:9/' })).uuid;

if (!POSTGRES_TEST_URL) {
  describeOn(POSTGRES, 'subscription sync (PostgreSQL LISTEN/NOTIFY)', () => undefined);
} else {
  const base = POSTGRES_TEST_URL;
  describe('subscription sync (PostgreSQL LISTEN/NOTIFY)', () => {
    it('applies writes as they are notified, long before its slow poll, and listens again after its connection is killed', async (t: TestContext) => {
      const s = await setup(await createPostgres(base));
      try {
        await eventually(() => s.sync.listening, 'the listener is up');
        const times: Record<string, number> = {};
        const uuid = await create(s.service);
        times.create = await propagation(s.matcher, uuid, true);
        await s.service.update('alice', uuid, { disabled: 'now' });
        times.disable = await propagation(s.matcher, uuid, false);
        await s.service.update('alice', uuid, { disabled: null });
        times['re-enable'] = await propagation(s.matcher, uuid, true);
        // As the delivery stage disables a subscription whose target failed for good.
        await s.handle.write((tx) => disableSubscription(tx, s.handle.capabilities, uuid, 'gone', systemClock()()));
        times['disable by delivery'] = await propagation(s.matcher, uuid, false);

        const killed = s.sync.listenerPid;
        assert.ok(killed);
        const trailBefore = s.trail.length;
        const result = await s.handle.db
          .selectNoFrom((eb) => eb.fn<boolean>('pg_terminate_backend', [eb.val(killed)]).as('done'))
          .executeTakeFirstOrThrow();
        assert.equal(result.done, true);
        await eventually(() => s.sync.listening && s.sync.listenerPid !== killed, 'the listener reconnects');
        // Past the poll that follows the reconnection: what comes next can only come by NOTIFY.
        // The reconnection brings a reload, then a poll that applies the rows written in the last
        // seconds (the disable above among them): once it has applied one, it has read, and the
        // next poll is a minute away.
        await eventually(() => {
          const reload = s.trail.indexOf('reload', trailBefore);
          return reload >= 0 && s.trail.includes('apply', reload + 1);
        }, 'the poll after the reconnection');
        const after = await create(s.service);
        times['create after reconnect'] = await propagation(s.matcher, after, true);
        await s.service.remove('alice', after);
        times.delete = await propagation(s.matcher, after, false);
        t.diagnostic(
          `propagation (ms): ${Object.entries(times)
            .map(([k, v]) => `${k} ${v.toFixed(1)}`)
            .join(', ')}`,
        );
      } finally {
        await s.close();
      }
    });

    it('names the channel after a schema too long for it, and still hears writes', async () => {
      const schema = `test_long_schema_${randomBytes(20).toString('hex')}`;
      assert.ok(schema.length > 40 && schema.length <= 63);
      const url = new URL(base);
      url.searchParams.set('schema', schema);
      const s = await setup({
        url: url.toString(),
        cleanup: async () => {
          const drop = openDatabase(base);
          await drop.db.schema.dropSchema(schema).ifExists().cascade().execute();
          await drop.close();
        },
      });
      try {
        await eventually(() => s.sync.listening, 'the listener is up');
        await propagation(s.matcher, await create(s.service), true);
      } finally {
        await s.close();
      }
    });

    it("takes the notification of the instance's own create, which it need not read back", async () => {
      const expected = new ExpectedNotifications();
      const s = await setup(await createPostgres(base), { expected });
      try {
        await eventually(() => s.sync.listening, 'the listener is up');
        const own = subscriptionService({
          database: s.handle,
          clock: systemClock(),
          secretKey: null,
          dialectMode: 'auto',
          userSubscriptions: 1000,
          targetGuard: defaultTargetGuard(),
          expectedNotifications: expected,
        });
        await create(own);
        // Notifications come in commit order: once the later create is applied, the own one's has come.
        await propagation(s.matcher, await create(s.service), true);
        assert.equal(expected.size, 0);
      } finally {
        await s.close();
      }
    });

    it('without a listening connection, the poll finds every write', async () => {
      const database = await createPostgres(base);
      // Nothing listens on port 9: the listener keeps retrying, the poll does the work.
      const unreachable = new URL(database.url);
      unreachable.port = '9';
      const s = await setup(database, { listenUrl: unreachable.toString(), pollMs: 100 });
      try {
        const uuid = await create(s.service);
        await propagation(s.matcher, uuid, true);
        await s.service.remove('alice', uuid);
        await propagation(s.matcher, uuid, false);
        assert.equal(s.sync.listening, false);
      } finally {
        await s.close();
      }
    });
  });
}
