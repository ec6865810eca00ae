/**
 * purgeOldestEventsBefore as the retention purge uses it: only finished events, their matches
 * counted, and on PostgreSQL several purges at once sharing the work (SKIP LOCKED).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { type PurgedEvents, purgeOldestEventsBefore } from '../../src/db/stores/event-log.js';
import type { EventRow, MatchRow } from '../../src/db/stores/events.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchState } from '../../src/db/tables.js';
import { describeOn, openTestDatabase, POSTGRES, type TestBackend, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';

const SUBSCRIPTION = '00000000-0000-0000-0000-0000000000c1';
const CUT_OFF = 1_000_000;
const FINISHED: readonly MatchState[] = ['delivered', 'denied', 'failed', 'cancelled'];

interface Seeded {
  event: EventRow;
  matches: MatchRow[];
}

/** Inserts events, each with matches in the given states and one attempt per match, in a few statements. */
async function seed(handle: DatabaseHandle, specs: ReadonlyArray<{ received: number; states: readonly MatchState[] }>): Promise<Seeded[]> {
  const seeded = specs.map(({ received, states }, i): Seeded => {
    const uuid = randomUUID();
    const event = { uuid, source: '/purge', event_id: `${i}-${uuid}`, type: 't', spec_version: '1.0', body: '{}', received };
    const matches = states.map((state) =>
      matchRow({ event_uuid: uuid, subscription_uuid: SUBSCRIPTION, state, policy_code: 200, created: received, attempts: 1 }),
    );
    return { event, matches };
  });
  const inChunks = async <T>(rows: T[], insert: (chunk: T[]) => Promise<unknown>) => {
    for (let i = 0; i < rows.length; i += 200) await insert(rows.slice(i, i + 200));
  };
  await inChunks(
    seeded.map((s) => s.event),
    (chunk) => handle.db.insertInto('events').values(chunk).execute(),
  );
  const matches = seeded.flatMap((s) => s.matches);
  await inChunks(matches, (chunk) => handle.db.insertInto('matches').values(chunk).execute());
  const attempts = matches.map((m) => ({
    uuid: randomUUID(),
    match_uuid: m.uuid,
    stage: 'deliver' as const,
    at: m.created,
    status: 200,
    error: null,
    duration_ms: 1,
  }));
  await inChunks(attempts, (chunk) => handle.db.insertInto('attempts').values(chunk).execute());
  return seeded;
}

async function count(handle: DatabaseHandle, table: 'events' | 'matches' | 'attempts'): Promise<number> {
  const row = await handle.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function eventUuids(handle: DatabaseHandle): Promise<Set<string>> {
  return new Set((await handle.db.selectFrom('events').select('uuid').execute()).map((r) => r.uuid));
}

async function withLog(backend: TestBackend, body: (handle: DatabaseHandle, url: string) => Promise<void>): Promise<void> {
  const t = await openTestDatabase(backend);
  try {
    await insertSubscription(t.handle.db, t.handle.capabilities, subscriptionRow({ uuid: SUBSCRIPTION }));
    await body(t.handle, t.database.url);
  } finally {
    await t.close();
  }
}

const purge = (handle: DatabaseHandle, limit: number): Promise<PurgedEvents> =>
  purgeOldestEventsBefore(handle.db, CUT_OFF, limit, { force: false, skipLocked: handle.capabilities.skipLocked });

for (const backend of testBackends()) {
  describeOn(backend, `purging finished events (${backend.name})`, () => {
    it('deletes the old events whose matches are all finished, or that have none, with their matches and attempts, and counts them', async () => {
      await withLog(backend, async (handle) => {
        const [allFinished, noMatch, waitingForPolicy, delivering, partlyFinished, recent] = (await seed(handle, [
          { received: 10, states: FINISHED },
          { received: 20, states: [] },
          { received: 30, states: ['policy'] },
          { received: 40, states: ['deliver'] },
          { received: 50, states: ['delivered', 'deliver'] },
          { received: CUT_OFF, states: ['delivered'] },
        ])) as [Seeded, Seeded, Seeded, Seeded, Seeded, Seeded];

        const purged = await purge(handle, 500);
        assert.deepEqual(new Set(purged.eventUuids), new Set([allFinished.event.uuid, noMatch.event.uuid]));
        assert.equal(purged.matches, 4, 'the four matches of the finished event');
        assert.deepEqual(
          await eventUuids(handle),
          new Set([waitingForPolicy, delivering, partlyFinished, recent].map((s) => s.event.uuid)),
          'unfinished work is kept, and an event received at the cut-off is not older than it',
        );
        const remainingMatches = (await handle.db.selectFrom('matches').select('uuid').execute()).map((r) => r.uuid).sort();
        assert.deepEqual(
          remainingMatches,
          [waitingForPolicy, delivering, partlyFinished, recent].flatMap((s) => s.matches.map((m) => m.uuid)).sort(),
        );
        assert.equal(await count(handle, 'attempts'), remainingMatches.length, 'the purged matches’ attempts went with them');
        assert.deepEqual(await purge(handle, 500), { eventUuids: [], matches: 0 }, 'nothing left to purge');
      });
    });

    it('takes the oldest first, at most the limit per call', async () => {
      await withLog(backend, async (handle) => {
        const seeded = await seed(
          handle,
          [5, 1, 4, 2, 3].map((received) => ({ received, states: ['delivered'] as const })),
        );
        const byAge = [...seeded].sort((a, b) => a.event.received - b.event.received).map((s) => s.event.uuid);
        assert.deepEqual(new Set((await purge(handle, 2)).eventUuids), new Set(byAge.slice(0, 2)));
        assert.deepEqual(new Set((await purge(handle, 2)).eventUuids), new Set(byAge.slice(2, 4)));
        assert.deepEqual((await purge(handle, 2)).eventUuids, [byAge[4]], 'a short batch: caught up');
      });
    });
  });
}

describeOn(POSTGRES, 'purging with several instances on PostgreSQL', () => {
  it('skips the events another purge holds instead of waiting for them', async () => {
    await withLog(POSTGRES, async (first, url) => {
      const second = openDatabase(url);
      try {
        const seeded = await seed(
          first,
          Array.from({ length: 8 }, (_, i) => ({ received: 100 + i, states: ['delivered'] as const })),
        );
        const oldest = seeded.slice(0, 3).map((s) => s.event.uuid);
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        let locked!: () => void;
        const lockTaken = new Promise<void>((resolve) => (locked = resolve));
        // Another purge in the middle of its batch: the three oldest events locked, not yet deleted.
        const holder = first.db.transaction().execute(async (tx) => {
          await tx.selectFrom('events').select('uuid').where('uuid', 'in', oldest).forUpdate().execute();
          locked();
          await released;
        });
        try {
          await lockTaken;
          const timeout = new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 3_000).unref());
          const outcome = await Promise.race([purge(second, 4), timeout]);
          assert.notEqual(outcome, 'waited', 'the purge waited for the locked events');
          assert.deepEqual(
            new Set((outcome as PurgedEvents).eventUuids),
            new Set(seeded.slice(3, 7).map((s) => s.event.uuid)),
            'the next four, not the locked three',
          );
        } finally {
          release();
          await holder;
        }
        assert.deepEqual(
          new Set((await purge(second, 4)).eventUuids),
          new Set([...oldest, seeded[7]!.event.uuid]),
          'once released, they are purged',
        );
      } finally {
        await second.close();
      }
    });
  });

  it('two purges at once delete each eligible event exactly once, and nothing else', async () => {
    await withLog(POSTGRES, async (first, url) => {
      const second = openDatabase(url);
      try {
        // Every seventh event still has a delivery to make; the last hundred are too recent.
        const specs = Array.from({ length: 2_100 }, (_, i) => ({
          received: i < 2_000 ? 100 + i : CUT_OFF + i,
          states: i % 7 === 0 ? (['delivered', 'deliver'] as const) : (['delivered', 'failed'] as const),
        }));
        const seeded = await seed(first, specs);
        const eligible = seeded.filter((s) => s.event.received < CUT_OFF && !s.matches.some((m) => m.state === 'deliver'));
        const kept = seeded.filter((s) => !eligible.includes(s));
        assert.ok(eligible.length > 1_500 && kept.length > 300);

        const purgeUntilCaughtUp = async (handle: DatabaseHandle) => {
          const batches: PurgedEvents[] = [];
          for (;;) {
            const batch = await purge(handle, 50);
            batches.push(batch);
            if (batch.eventUuids.length < 50) return batches;
          }
        };
        const [a, b] = await Promise.all([purgeUntilCaughtUp(first), purgeUntilCaughtUp(second)]);
        const deletedBy = (batches: PurgedEvents[]) => batches.flatMap((batch) => batch.eventUuids);
        const [byA, byB] = [deletedBy(a), deletedBy(b)];
        const inA = new Set(byA);
        const both = byB.filter((uuid) => inA.has(uuid));
        assert.deepEqual(both, [], 'no event is reported deleted by both');
        assert.equal(byA.length + byB.length, eligible.length, 'the events each reports deleted add up to the eligible ones');
        assert.deepEqual(new Set([...byA, ...byB]), new Set(eligible.map((s) => s.event.uuid)));
        const matchesReported = [...a, ...b].reduce((sum, batch) => sum + batch.matches, 0);
        assert.equal(matchesReported, eligible.length * 2, 'and their matches, two each');

        assert.equal(await count(first, 'events'), kept.length);
        assert.deepEqual(await eventUuids(first), new Set(kept.map((s) => s.event.uuid)));
        assert.equal(await count(first, 'matches'), kept.length * 2);
        assert.equal(await count(first, 'attempts'), kept.length * 2);
      } finally {
        await second.close();
      }
    });
  });
});
