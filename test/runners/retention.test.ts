/**
 * The retention purge's loop on a real database: rounds, batches, the pause between rounds,
 * and a failing round. (test/e2e/retention.test.ts runs it in the server process.)
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchState } from '../../src/db/tables.js';
import { roundIntervalMs, startRetentionPurge } from '../../src/runners/retention.js';
import { createMetrics } from '../../src/metrics/registry.js';
import { systemClock } from '../../src/time/clock.js';
import { parseExposition, sample } from '../metrics/exposition.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';

const SUBSCRIPTION = '00000000-0000-0000-0000-0000000000d1';
const HOUR_MS = 3_600_000;
const clock = systemClock();

/** Events received `ageMs` ago, each with one match in `state`. */
async function seed(handle: DatabaseHandle, n: number, ageMs: number, state: MatchState = 'delivered'): Promise<string[]> {
  const received = clock() - ageMs * 1000;
  const events = Array.from({ length: n }, () => {
    const uuid = randomUUID();
    return { uuid, source: '/retention', event_id: uuid, type: 't', spec_version: '1.0', body: '{}', received };
  });
  await handle.db.insertInto('events').values(events).execute();
  await handle.db
    .insertInto('matches')
    .values(
      events.map((e) => matchRow({ event_uuid: e.uuid, subscription_uuid: SUBSCRIPTION, state, policy_code: 200, created: received })),
    )
    .execute();
  return events.map((e) => e.uuid);
}

async function eventUuids(handle: DatabaseHandle): Promise<Set<string>> {
  return new Set((await handle.db.selectFrom('events').select('uuid').execute()).map((r) => r.uuid));
}

describe('retention purge: time between rounds', () => {
  it('is a hundredth of the retention, from one second to one minute', () => {
    assert.equal(roundIntervalMs(2_000), 1_000);
    assert.equal(roundIntervalMs(60_000), 1_000);
    assert.equal(roundIntervalMs(10 * 60_000), 6_000);
    assert.equal(roundIntervalMs(HOUR_MS), 36_000);
    assert.equal(roundIntervalMs(30 * 24 * HOUR_MS), 300_000);
  });
});

for (const backend of testBackends()) {
  describeOn(backend, `retention purge (${backend.name})`, () => {
    async function withLog(body: (handle: DatabaseHandle) => Promise<void>): Promise<void> {
      const t = await openTestDatabase(backend);
      try {
        await insertSubscription(t.handle.db, t.handle.capabilities, subscriptionRow({ uuid: SUBSCRIPTION }));
        await body(t.handle);
      } finally {
        await t.close();
      }
    }

    it('works through a backlog of full batches in one round, keeps what is recent or unfinished, and counts what it purged', async () => {
      await withLog(async (handle) => {
        await seed(handle, 35, 2 * HOUR_MS);
        const kept = [...(await seed(handle, 2, 2 * HOUR_MS, 'deliver')), ...(await seed(handle, 3, 10 * 60_000))];
        const metrics = createMetrics();
        const errors: unknown[] = [];
        // A one-hour retention: rounds 36 s apart, so all 35 going at once means full batches did not wait for a round.
        const purge = startRetentionPurge({
          database: handle,
          clock,
          retentionMs: HOUR_MS,
          metrics,
          maxErrorPauseMs: 60_000,
          onError: (e) => errors.push(e),
          batchSize: 10,
        });
        try {
          await eventually(async () => (await eventUuids(handle)).size === kept.length, 'the 35 old finished events are purged', 10_000);
        } finally {
          await purge.stop();
        }
        assert.deepEqual(errors, []);
        assert.deepEqual(await eventUuids(handle), new Set(kept));
        const samples = parseExposition(await metrics.registry.metrics());
        assert.equal(sample(samples, 'notifications_events_purged_total'), 35);
        assert.equal(sample(samples, 'notifications_matches_purged_total'), 35);
      });
    });

    it('reports a failing round and tries again until it succeeds', async () => {
      await withLog(async (handle) => {
        await seed(handle, 3, 10_000);
        await sql`alter table events rename to events_away`.execute(handle.db);
        const errors: unknown[] = [];
        const metrics = createMetrics();
        const purge = startRetentionPurge({
          database: handle,
          clock,
          retentionMs: 1_000,
          metrics,
          maxErrorPauseMs: 2_000,
          onError: (e) => errors.push(e),
        });
        try {
          await eventually(() => errors.length >= 1, 'the failing round is reported', 5_000);
          await sql`alter table events_away rename to events`.execute(handle.db);
          await eventually(async () => (await eventUuids(handle)).size === 0, 'a later round purges the events', 10_000);
        } finally {
          await purge.stop();
        }
        assert.match(String(errors[0]), /events/);
      });
    });
  });
}
