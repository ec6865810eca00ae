import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import {
  type EventRow,
  type EventToLog,
  type LoggedEvent,
  logEvent,
  logEvents,
  logEventsInOneStatement,
  type MatchRow,
} from '../../src/db/stores/events.js';
import { countRuns } from '../../src/db/stores/failure-runs.js';
import { matchQueue } from '../../src/db/stores/match-queue.js';
import { type AttemptRecord, claimDueMatches, recordAttempts, settleMatches } from '../../src/db/stores/matches.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { Database } from '../../src/db/tables.js';
import { EventLogBatch } from '../../src/receive/event-log-batch.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';

const SUBSCRIPTION = '00000000-0000-0000-0000-00000000000a';
const LEASE_US = 30_000_000;

function event(source = '/facility', id: string = randomUUID()): EventRow {
  return { uuid: randomUUID(), source, event_id: id, type: 'org.example', spec_version: '1.0', body: '{}', received: 1 };
}

function match(eventUuid: string, due: number, state: MatchRow['state'] = 'policy'): MatchRow {
  return matchRow({ event_uuid: eventUuid, subscription_uuid: SUBSCRIPTION, state, created: due });
}

type LogEvents = (db: Kysely<Database>, entries: readonly EventToLog[]) => Promise<LoggedEvent[]>;

/** Bodies as they may arrive: what an array literal or a parameter could mangle. */
const AWKWARD_BODIES = ['{"a":"say \\"hi\\""}', '{"path":"C:\\\\data"}', '{"set":"{a,b}"}', 'NULL', '', '{"snow":"☃ 𝄞"}'];

for (const backend of testBackends()) {
  describeOn(backend, `event log and work queue (${backend.name})`, () => {
    type Queue = Awaited<ReturnType<typeof openTestDatabase>>;
    async function withQueue(body: (t: Queue) => Promise<void>): Promise<void> {
      const t = await openTestDatabase(backend);
      try {
        await insertSubscription(t.handle.db, t.handle.capabilities, subscriptionRow({ uuid: SUBSCRIPTION }));
        await body(t);
      } finally {
        await t.close();
      }
    }

    /** `body` with each way this database logs events, on a fresh database each: logEvents, and logEventsInOneStatement where one statement can write both tables. */
    async function withEachLogger(body: (log: LogEvents, t: Queue) => Promise<void>): Promise<void> {
      for (const log of [logEvents, logEventsInOneStatement]) {
        await withQueue(async (t) => {
          if (log === logEvents || t.handle.capabilities.dataModifyingWith) await body(log, t);
        });
      }
    }

    it('logs an event once per (source, id); a duplicate returns the first', async () => {
      await withQueue(async ({ handle }) => {
        const first = event('/a', 'same-id');
        const logged = await logEvent(handle.db, first, [match(first.uuid, 1), match(first.uuid, 1)]);
        assert.deepEqual(logged, { uuid: first.uuid, matches: 2, duplicate: false });
        const again = await logEvent(handle.db, event('/a', 'same-id'), [match(randomUUID(), 1)]);
        assert.deepEqual(again, { uuid: first.uuid, matches: 2, duplicate: true });
        const other = await logEvent(handle.db, event('/b', 'same-id'), []);
        assert.equal(other.duplicate, false, 'the same id from another source is another event');
        const count = await handle.db
          .selectFrom('matches')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(count.n), 2);
      });
    });

    it('logs many events in one call: duplicates within the call and of earlier events get the first', async () => {
      await withEachLogger(async (log, { handle }) => {
        const earlier = event('/a', 'earlier');
        await logEvent(handle.db, earlier, [match(earlier.uuid, 1)]);
        const first = event('/a', 'twice');
        const second = event('/a', 'twice');
        const again = event('/a', 'earlier');
        const fresh = event('/b', 'earlier');
        const logged = await log(handle.db, [
          { event: first, matches: [match(first.uuid, 1), match(first.uuid, 1)] },
          { event: second, matches: [match(second.uuid, 1)] },
          { event: again, matches: [match(again.uuid, 1)] },
          { event: fresh, matches: [] },
        ]);
        assert.deepEqual(
          logged,
          [
            { uuid: first.uuid, matches: 2, duplicate: false },
            { uuid: first.uuid, matches: 2, duplicate: true },
            { uuid: earlier.uuid, matches: 1, duplicate: true },
            { uuid: fresh.uuid, matches: 0, duplicate: false },
          ],
          log.name,
        );
        const matches = await handle.db.selectFrom('matches').select('event_uuid').execute();
        assert.deepEqual(
          matches.map((m) => m.event_uuid).sort(),
          [earlier.uuid, first.uuid, first.uuid].sort(),
          `${log.name}: no match rows for duplicates`,
        );
      });
    });

    it('logs more events than one multi-row statement takes', async () => {
      await withEachLogger(async (log, { handle }) => {
        const entries = Array.from({ length: 2_500 }, () => {
          const e = event();
          return { event: e, matches: [match(e.uuid, 1), match(e.uuid, 1)] };
        });
        const logged = await log(handle.db, entries);
        assert.ok(
          logged.every((l, i) => l.uuid === entries[i]!.event.uuid && !l.duplicate && l.matches === 2),
          log.name,
        );
        const count = await handle.db
          .selectFrom('matches')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(count.n), 5_000, log.name);
      });
    });

    it('logs every column of events and matches as given, bodies unchanged', async () => {
      await withEachLogger(async (log, { handle }) => {
        // Received with tracing (a receive span stored with the event) and without.
        const traceparent = (i: number) => (i % 2 === 0 ? `00-4bf92f3577b34da6a3ce929d0e0e4736-${String(i).padStart(16, '0')}-01` : null);
        const events = AWKWARD_BODIES.map((body, i) => ({
          ...event(),
          body,
          received: 1_700_000_000_000_000,
          traceparent: traceparent(i),
        }));
        const entries = events.map((e, i) => ({
          event: e,
          matches:
            i % 2 === 0
              ? [
                  match(e.uuid, 7),
                  { ...match(e.uuid, 5), locked_by: 'holder', locked_until: 99, policy_code: i, target_code: 503, attempts: 2 },
                ]
              : [],
        }));
        await log(handle.db, entries);
        const byUuid = <T extends { uuid: string }>(rows: T[]) => rows.sort((a, b) => a.uuid.localeCompare(b.uuid));
        assert.deepEqual(byUuid(await handle.db.selectFrom('events').selectAll().execute()), byUuid(events), log.name);
        assert.deepEqual(
          byUuid(await handle.db.selectFrom('matches').selectAll().execute()),
          byUuid(entries.flatMap((e) => e.matches)),
          log.name,
        );
      });
    });

    it('a batch of events arriving together commits once; an event that cannot be written fails alone', async () => {
      await withQueue(async ({ handle }) => {
        const batch = new EventLogBatch(handle);
        const good = [event(), event(), event()];
        const bad = event();
        const orphan = { ...match(bad.uuid, 1), subscription_uuid: randomUUID() }; // no such subscription
        const results = await Promise.allSettled([
          ...good.map((e) => batch.log({ event: e, matches: [match(e.uuid, 1)] })),
          batch.log({ event: bad, matches: [orphan] }),
        ]);
        assert.deepEqual(
          results.slice(0, 3).map((r) => r.status === 'fulfilled' && r.value.uuid),
          good.map((e) => e.uuid),
        );
        assert.equal(results[3]!.status, 'rejected');
        const events = await handle.db.selectFrom('events').select('uuid').execute();
        assert.deepEqual(events.map((e) => e.uuid).sort(), good.map((e) => e.uuid).sort(), 'the failed event left nothing behind');
      });
    });

    it('claims due rows of a stage, oldest first, up to the limit', async () => {
      await withQueue(async ({ handle }) => {
        const e = event();
        const rows = [match(e.uuid, 30), match(e.uuid, 10), match(e.uuid, 20), match(e.uuid, 500), match(e.uuid, 5, 'deliver')];
        await logEvent(handle.db, e, rows);
        const claimed = await claimDueMatches(
          handle.db,
          handle.capabilities,
          'policy',
          { holder: 'w1', now: 100, durationUs: LEASE_US },
          2,
        );
        assert.deepEqual(
          claimed.map((r) => r.due),
          [10, 20],
        );
        assert.ok(claimed.every((r) => r.locked_by === 'w1' && r.locked_until === 100 + LEASE_US));
      });
    });

    it('a lease keeps a row from other claims until it expires', async () => {
      await withQueue(async ({ handle }) => {
        const e = event();
        await logEvent(handle.db, e, [match(e.uuid, 1)]);
        const claim = (holder: string, now: number) =>
          claimDueMatches(handle.db, handle.capabilities, 'policy', { holder, now, durationUs: LEASE_US }, 10);
        assert.equal((await claim('w1', 100)).length, 1);
        assert.equal((await claim('w2', 200)).length, 0, 'held');
        const taken = await claim('w2', 100 + LEASE_US + 1);
        assert.equal(taken.length, 1, 'an expired lease returns the row');
        assert.deepEqual(
          await settleMatches(handle.db, [taken[0]!.uuid], 'w1', { state: 'deliver', due: 5 }, 300),
          [],
          'the old holder cannot settle it',
        );
        assert.deepEqual(
          await settleMatches(handle.db, [taken[0]!.uuid], 'w2', { state: 'deliver', due: 5, policyCode: 200, attempts: 'count' }, 300),
          [taken[0]!.uuid],
        );
        const row = await handle.db.selectFrom('matches').selectAll().executeTakeFirstOrThrow();
        assert.deepEqual(
          [row.state, row.due, row.policy_code, row.attempts, row.locked_by, row.locked_until],
          ['deliver', 5, 200, 1, null, null],
        );
      });
    });

    it("extends the holder's own leases, even once run out, and not a row another holder has taken since nor one settled", async () => {
      await withQueue(async ({ handle }) => {
        const e = event();
        const rows = [match(e.uuid, 1), match(e.uuid, 2), match(e.uuid, 3)];
        await logEvent(handle.db, e, rows);
        const [taken, own, settled] = rows.map((row) => row.uuid) as [string, string, string];
        const claim = (holder: string, now: number, limit: number) =>
          claimDueMatches(handle.db, handle.capabilities, 'policy', { holder, now, durationUs: LEASE_US }, limit);
        assert.equal((await claim('w1', 100, 3)).length, 3);
        await settleMatches(handle.db, [settled], 'w1', { state: 'policy', due: 5 }, 200);
        const ranOut = 100 + LEASE_US + 1;
        assert.deepEqual(
          (await claim('w2', ranOut, 1)).map((row) => row.uuid),
          [taken],
        );

        assert.equal(await matchQueue(handle).extendLeases('w1', [taken, own, settled], ranOut + LEASE_US), 1);
        const leases = await handle.db.selectFrom('matches').select(['uuid', 'locked_by', 'locked_until']).orderBy('created').execute();
        assert.deepEqual(leases, [
          { uuid: taken, locked_by: 'w2', locked_until: ranOut + LEASE_US },
          { uuid: own, locked_by: 'w1', locked_until: ranOut + LEASE_US },
          { uuid: settled, locked_by: null, locked_until: null },
        ]);
        assert.deepEqual(
          (await claim('w3', ranOut + 1, 10)).map((row) => row.uuid),
          [settled],
          'the lease extended keeps its row from claims',
        );
      });
    });

    it('a claim leaves out the rows it is told to, whatever their leases say', async () => {
      await withQueue(async ({ handle }) => {
        const e = event();
        const rows = [match(e.uuid, 1), match(e.uuid, 2), match(e.uuid, 3)];
        await logEvent(handle.db, e, rows);
        // Through the queue, as the runners claim: on SQLite, in the database's own thread.
        const claim = (now: number, excludeMatches: string[]) =>
          matchQueue(handle).claim('policy', { holder: 'w1', now, durationUs: LEASE_US }, 10, { excludeMatches });
        assert.deepEqual(
          (await claim(100, [rows[0]!.uuid])).map((r) => r.uuid),
          [rows[1]!.uuid, rows[2]!.uuid],
          'a free row left out',
        );
        assert.deepEqual(
          (await claim(100 + LEASE_US + 1, [rows[1]!.uuid])).map((r) => r.uuid),
          [rows[0]!.uuid, rows[2]!.uuid],
          'of the two whose leases ran out, the one left out stays',
        );
      });
    });

    it('concurrent claims get disjoint rows', async () => {
      await withQueue(async ({ handle }) => {
        const e = event();
        await logEvent(
          handle.db,
          e,
          Array.from({ length: 200 }, (_, i) => match(e.uuid, i)),
        );
        const claims = await Promise.all(
          ['a', 'b', 'c', 'd'].map((holder) =>
            claimDueMatches(handle.db, handle.capabilities, 'policy', { holder, now: 1_000, durationUs: LEASE_US }, 60),
          ),
        );
        const all = claims.flat().map((r) => r.uuid);
        assert.equal(new Set(all).size, all.length, 'no row claimed twice');
        assert.equal(all.length, 200);
      });
    });

    it('keeps every attempt', async () => {
      await withQueue(async ({ handle }) => {
        const e = event();
        const m = match(e.uuid, 1);
        await logEvent(handle.db, e, [m]);
        await recordAttempts(handle.db, handle.capabilities, [
          { matchUuid: m.uuid, stage: 'deliver', at: 10, status: 500, error: null, durationMs: 12.4 },
          { matchUuid: m.uuid, stage: 'deliver', at: 20, status: null, error: 'connection refused', durationMs: 1 },
        ]);
        const rows = await handle.db.selectFrom('attempts').select(['at', 'status', 'error', 'duration_ms']).orderBy('at').execute();
        assert.deepEqual(rows, [
          { at: 10, status: 500, error: null, duration_ms: 12 },
          { at: 20, status: null, error: 'connection refused', duration_ms: 1 },
        ]);
      });
    });

    it('records no attempt for a match that vanished (its event purged), and keeps the others', async () => {
      await withQueue(async ({ handle }) => {
        const [purged, kept] = [event(), event()];
        const [gone, stays] = [match(purged.uuid, 1, 'deliver'), match(kept.uuid, 1, 'deliver')];
        await logEvent(handle.db, purged, [gone]);
        await logEvent(handle.db, kept, [stays]);
        await handle.db.deleteFrom('events').where('uuid', '=', purged.uuid).execute();
        const attempt = (matchUuid: string) => ({ matchUuid, stage: 'deliver' as const, at: 10, status: 200, error: null, durationMs: 3 });
        const recorded = await handle.write((tx) => recordAttempts(tx, handle.capabilities, [attempt(gone.uuid), attempt(stays.uuid)]));
        assert.equal(recorded, 1);
        const rows = await handle.db.selectFrom('attempts').select('match_uuid').execute();
        assert.deepEqual(rows, [{ match_uuid: stays.uuid }]);
      });
    });

    /** A match leased to `holder`, due at 1, of a new event logged with it. */
    async function loggedLeased(handle: Queue['handle'], holder = 'me'): Promise<MatchRow> {
      const e = event();
      const row = { ...match(e.uuid, 1, 'deliver'), locked_by: holder, locked_until: LEASE_US };
      await logEvent(handle.db, e, [row]);
      return row;
    }
    const attempt = (row: MatchRow): AttemptRecord => ({
      matchUuid: row.uuid,
      stage: 'deliver',
      at: 10,
      status: 200,
      error: null,
      durationMs: 3,
    });

    it('settles through the queue: each row its change, releases, attempts; not rows another holds, nor attempts of vanished matches', async () => {
      await withQueue(async ({ handle }) => {
        const [delivered, retried, released, theirs, vanished] = [
          await loggedLeased(handle),
          await loggedLeased(handle),
          await loggedLeased(handle),
          await loggedLeased(handle, 'other'),
          await loggedLeased(handle),
        ];
        await handle.db.deleteFrom('events').where('uuid', '=', vanished.event_uuid).execute();
        const settled = await matchQueue(handle).settle(
          'me',
          {
            changes: [
              { uuid: delivered.uuid, change: { state: 'delivered', targetCode: 200 } },
              { uuid: retried.uuid, change: { state: 'deliver', due: 500, targetCode: 503, attempts: 'count' } },
              { uuid: theirs.uuid, change: { state: 'delivered', targetCode: 200 } },
              { uuid: vanished.uuid, change: { state: 'delivered', targetCode: 200 } },
            ],
            attempts: [attempt(delivered), attempt(retried), attempt(theirs), attempt(vanished)],
            disable: [],
            release: [released.uuid],
          },
          20,
        );
        assert.deepEqual([...settled.rows].sort(), [delivered.uuid, retried.uuid].sort());
        const rows = await handle.db
          .selectFrom('matches')
          .select(['uuid', 'state', 'due', 'target_code', 'attempts', 'locked_by', 'updated'])
          .execute();
        const after = (row: MatchRow) => rows.find((r) => r.uuid === row.uuid);
        const unleased = { attempts: 0, locked_by: null };
        assert.deepEqual(after(delivered), {
          uuid: delivered.uuid,
          state: 'delivered',
          due: 1,
          target_code: 200,
          ...unleased,
          updated: 20,
        });
        assert.deepEqual(after(retried), {
          uuid: retried.uuid,
          state: 'deliver',
          due: 500,
          target_code: 503,
          ...unleased,
          attempts: 1,
          updated: 20,
        });
        assert.deepEqual(after(released), { uuid: released.uuid, state: 'deliver', due: 1, target_code: null, ...unleased, updated: 1 });
        assert.deepEqual(after(theirs), {
          uuid: theirs.uuid,
          state: 'deliver',
          due: 1,
          target_code: null,
          attempts: 0,
          locked_by: 'other',
          updated: 1,
        });
        const attempts = await handle.db.selectFrom('attempts').select('match_uuid').execute();
        assert.deepEqual(attempts.map((a) => a.match_uuid).sort(), [delivered.uuid, retried.uuid, theirs.uuid].sort());
      });
    });

    it('a row cancelled while in flight keeps its state on a settlement back to the queue, and its lease is let go', async () => {
      await withQueue(async ({ handle }) => {
        const row = await loggedLeased(handle);
        await handle.db.updateTable('matches').set({ state: 'cancelled' }).where('uuid', '=', row.uuid).execute();
        const change = { state: 'deliver', policyCode: 200, attempts: 'reset' } as const;
        const settled = await matchQueue(handle).settle('me', { changes: [{ uuid: row.uuid, change }], attempts: [], disable: [] }, 20);
        assert.deepEqual([...settled.rows], []);
        assert.deepEqual(await handle.db.selectFrom('matches').select(['state', 'policy_code', 'locked_by', 'locked_until']).execute(), [
          { state: 'cancelled', policy_code: null, locked_by: null, locked_until: null },
        ]);
      });
    });

    it("a settlement of successes ends their subscriptions' runs of failures", async () => {
      await withQueue(async ({ handle }) => {
        const row = await loggedLeased(handle);
        await countRuns(handle.db, [{ subscription: SUBSCRIPTION, failed: true, error: 'target answered 503' }]);
        await matchQueue(handle).settle(
          'me',
          {
            changes: [{ uuid: row.uuid, change: { state: 'delivered', targetCode: 200 } }],
            attempts: [attempt(row)],
            disable: [],
            runs: [{ subscription: SUBSCRIPTION, failed: false }],
          },
          20,
        );
        assert.deepEqual(await handle.db.selectFrom('failure_runs').selectAll().execute(), []);
      });
    });

    it('a settlement is written whole or not at all: a statement of it that fails leaves the others unwritten', async () => {
      await withQueue(async ({ handle }) => {
        const [delivered, released] = [await loggedLeased(handle), await loggedLeased(handle)];
        await countRuns(handle.db, [{ subscription: SUBSCRIPTION, failed: true, error: 'target answered 503' }]);
        // The attempt's stage is NOT NULL: its insert fails, after the change and the release before it.
        const refused = { ...attempt(delivered), stage: null as unknown as AttemptRecord['stage'] };
        await assert.rejects(
          matchQueue(handle).settle(
            'me',
            {
              changes: [{ uuid: delivered.uuid, change: { state: 'delivered', targetCode: 200 } }],
              attempts: [refused],
              disable: [],
              runs: [{ subscription: SUBSCRIPTION, failed: false }],
              release: [released.uuid],
            },
            20,
          ),
        );
        const rows = await handle.db.selectFrom('matches').select(['uuid', 'state', 'locked_by']).orderBy('uuid').execute();
        assert.deepEqual(
          rows,
          [delivered, released]
            .map((r) => ({ uuid: r.uuid, state: 'deliver', locked_by: 'me' }))
            .sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
        );
        assert.deepEqual(await handle.db.selectFrom('attempts').selectAll().execute(), []);
        assert.equal((await handle.db.selectFrom('failure_runs').select('failures').execute()).length, 1, 'the run goes on');
      });
    });

    /**
     * A purge (eventpurge) that has deleted the event, in a transaction it holds open until
     * `commit`; `blocking` tells whether a statement of another connection waits for its locks.
     */
    async function heldPurge(
      handle: Queue['handle'],
      eventUuid: string,
    ): Promise<{ blocking(): Promise<boolean>; commit(): Promise<void> }> {
      let purgeDeleted!: () => void;
      const deleted = new Promise<void>((resolve) => (purgeDeleted = resolve));
      let mayCommit!: () => void;
      const committing = new Promise<void>((resolve) => (mayCommit = resolve));
      let pid = 0;
      const purge = handle.db.transaction().execute(async (tx) => {
        pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(tx)).rows[0]!.pid;
        await tx.deleteFrom('events').where('uuid', '=', eventUuid).execute();
        purgeDeleted();
        await committing;
      });
      await deleted;
      return {
        blocking: async () =>
          (
            await sql<{
              n: number;
            }>`select count(*)::int as n from pg_stat_activity where ${pid}::int = any(pg_blocking_pids(pid))`.execute(handle.db)
          ).rows[0]!.n > 0,
        commit: () => {
          mayCommit();
          return purge;
        },
      };
    }

    if (backend.name === 'postgres') {
      it('a purge that commits while a settlement waits for it: the settlement is made all the same, without the purged match', async () => {
        await withQueue(async ({ handle }) => {
          const [purged, kept] = [await loggedLeased(handle), await loggedLeased(handle)];
          const purge = await heldPurge(handle, purged.event_uuid);
          const delivered = { state: 'delivered' as const, targetCode: 200 };
          const settling = matchQueue(handle).settle(
            'me',
            {
              changes: [purged, kept].map((row) => ({ uuid: row.uuid, change: delivered })),
              attempts: [attempt(purged), attempt(kept)],
              disable: [],
            },
            20,
          );
          await eventually(purge.blocking, 'the settlement waits for the purge’s lock', 5_000);
          await purge.commit();
          assert.deepEqual([...(await settling).rows], [kept.uuid]);
          assert.deepEqual(await handle.db.selectFrom('attempts').select('match_uuid').execute(), [{ match_uuid: kept.uuid }]);
        });
      });

      it('a purge that deleted a match but has not committed yet: recording waits for it, then skips the match', async () => {
        await withQueue(async ({ handle }) => {
          const e = event();
          const m = match(e.uuid, 1, 'deliver');
          await logEvent(handle.db, e, [m]);
          const purge = await heldPurge(handle, e.uuid);
          const recording = handle.db
            .transaction()
            .execute((tx) =>
              recordAttempts(tx, handle.capabilities, [
                { matchUuid: m.uuid, stage: 'deliver', at: 10, status: 200, error: null, durationMs: 3 },
              ]),
            );
          // Without the row lock, the insert would see the row (not yet deleted for it) and then
          // fail its foreign key check once the purge commits. The purge commits once the
          // recording is seen waiting for it, not after a time that hopes it is.
          await eventually(purge.blocking, 'the recording waits for the purge’s lock', 5_000);
          await purge.commit();
          assert.equal(await recording, 0);
          assert.deepEqual(await handle.db.selectFrom('attempts').selectAll().execute(), []);
        });
      });
    }
  });
}
