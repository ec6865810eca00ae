import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { type EventRow, logEvent, type MatchRow } from '../../src/db/stores/events.js';
import { recordAttempts } from '../../src/db/stores/matches.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { parseCliDate } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, type TestBackend, testBackends } from '../support/database.js';
import { runCli } from '../support/processes.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';

const SUBSCRIPTION = '00000000-0000-0000-0000-0000000000b1';
const HOUR_US = 3600 * 1_000_000;
const at = (date: string) => parseCliDate(date)!;

function event(received: number): EventRow {
  const uuid = randomUUID();
  return { uuid, source: '/facility', event_id: uuid, type: 'org.example', spec_version: '1.0', body: '{}', received };
}

function match(eventUuid: string, state: MatchRow['state'] = 'delivered'): MatchRow {
  return matchRow({ event_uuid: eventUuid, subscription_uuid: SUBSCRIPTION, state, policy_code: 200 });
}

/** Logs an event with matches in these states, each match with one attempt. */
async function seed(handle: DatabaseHandle, received: number, states: MatchRow['state'][] = ['delivered']): Promise<EventRow> {
  const e = event(received);
  const matches = states.map((state) => match(e.uuid, state));
  await logEvent(handle.db, e, matches);
  await recordAttempts(
    handle.db,
    handle.capabilities,
    matches.map((m) => ({ matchUuid: m.uuid, stage: 'deliver', at: 2, status: 200, error: null, durationMs: 3 })),
  );
  return e;
}

async function remainingEvents(handle: DatabaseHandle): Promise<string[]> {
  return (await handle.db.selectFrom('events').select('uuid').orderBy('received').execute()).map((r) => r.uuid);
}

async function withLog(
  backend: TestBackend,
  body: (handle: DatabaseHandle, cli: (...args: string[]) => ReturnType<typeof runCli>) => Promise<void>,
) {
  const t = await openTestDatabase(backend);
  try {
    await insertSubscription(t.handle.db, t.handle.capabilities, subscriptionRow({ uuid: SUBSCRIPTION }));
    await body(t.handle, (...args) => runCli(['--database-url', t.database.url, ...args]));
  } finally {
    await t.close();
  }
}

for (const backend of testBackends()) {
  describeOn(backend, `svc-notifications-cmd eventpurge (${backend.name})`, () => {
    it('deletes events received before the date, oldest first, at most --limit, and says how many', async () => {
      await withLog(backend, async (handle, cli) => {
        const events: EventRow[] = [];
        for (const date of ['2024-01-01 00:00:03', '2024-01-01 00:00:01', '2024-01-01 00:00:02', '2024-01-01 00:00:04'])
          events.push(await seed(handle, at(date)));
        const [third, first, second, onTheDate] = events as [EventRow, EventRow, EventRow, EventRow];
        const limited = await cli('eventpurge', '--older-than-date', '2024-01-01 00:00:04', '--limit', '2');
        assert.equal(limited.code, 0, limited.stderr);
        assert.equal(limited.stdout, 'purged 2 events\n');
        assert.deepEqual(await remainingEvents(handle), [third.uuid, onTheDate.uuid], `${first.uuid} and ${second.uuid} go first`);
        const rest = await cli('eventpurge', '--older-than-date=2024-01-01 00:00:04');
        assert.equal(rest.stdout, 'purged 1 event\n');
        assert.deepEqual(await remainingEvents(handle), [onTheDate.uuid], 'an event received at the date itself is not older');
        assert.equal((await cli('eventpurge', '--older-than-date', '2024-01-01 00:00:04')).stdout, 'purged 0 events\n');
      });
    });

    it('by default deletes what is older than one day', async () => {
      await withLog(backend, async (handle, cli) => {
        const now = Date.now() * 1000;
        await seed(handle, now - 25 * HOUR_US);
        const recent = await seed(handle, now - 23 * HOUR_US);
        const result = await cli('eventpurge');
        assert.equal(result.code, 0, result.stderr);
        assert.equal(result.stdout, 'purged 1 event\n');
        assert.deepEqual(await remainingEvents(handle), [recent.uuid]);
      });
    });

    it('keeps events with deliveries in progress unless --force; takes their matches and attempts along', async () => {
      await withLog(backend, async (handle, cli) => {
        const base = at('2024-01-01 00:00:00');
        const finished = await seed(handle, base + 1, ['delivered', 'denied', 'failed', 'cancelled']);
        const waitingForPolicy = await seed(handle, base + 2, ['delivered', 'policy']);
        const delivering = await seed(handle, base + 3, ['deliver']);
        const kept = await seed(handle, at('2024-06-01 00:00:00'), ['delivered']);
        const result = await cli('eventpurge', '--older-than-date', '2024-02-01 00:00:00');
        assert.equal(result.code, 0, result.stderr);
        assert.equal(result.stdout, 'purged 1 event\n');
        assert.match(result.stderr, /kept 2 events .*in progress.*--force/);
        assert.deepEqual(await remainingEvents(handle), [waitingForPolicy.uuid, delivering.uuid, kept.uuid], `${finished.uuid} purged`);

        const forced = await cli('eventpurge', '--older-than-date', '2024-02-01 00:00:00', '--force');
        assert.equal(forced.stdout, 'purged 2 events\n');
        assert.equal(forced.stderr, '');
        assert.deepEqual(await remainingEvents(handle), [kept.uuid]);
        const matches = await handle.db.selectFrom('matches').select(['event_uuid', 'uuid']).execute();
        assert.deepEqual(
          matches.map((m) => m.event_uuid),
          [kept.uuid],
          'no orphan matches',
        );
        const attempts = await handle.db.selectFrom('attempts').select('match_uuid').execute();
        assert.deepEqual(
          attempts.map((a) => a.match_uuid),
          [matches[0]!.uuid],
          'no orphan attempts',
        );
      });
    });

    it('works through many events in batches, oldest first, stopping at --limit', async () => {
      await withLog(backend, async (handle, cli) => {
        const base = at('2024-01-01 00:00:00');
        const events = Array.from({ length: 1200 }, (_, i) => event(base + i));
        for (let i = 0; i < events.length; i += 400)
          await handle.db
            .insertInto('events')
            .values(events.slice(i, i + 400))
            .execute();
        // Unfinished work at the very start: skipped over, not a reason to stop.
        await handle.db
          .insertInto('matches')
          .values([match(events[0]!.uuid, 'policy'), ...events.slice(1).map((e) => match(e.uuid))])
          .execute();
        const result = await cli('eventpurge', '--older-than-date', '2025-01-01 00:00:00', '--limit', '1100');
        assert.equal(result.code, 0, result.stderr);
        assert.equal(result.stdout, 'purged 1100 events\n');
        assert.deepEqual(
          await remainingEvents(handle),
          [events[0]!, ...events.slice(1101)].map((e) => e.uuid),
        );
        const matches = await handle.db
          .selectFrom('matches')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(matches.n), 100);
      });
    });

    it('uuids: those events whatever their date, still keeping unfinished ones unless --force', async () => {
      await withLog(backend, async (handle, cli) => {
        const now = Date.now() * 1000;
        const recent = await seed(handle, now);
        const unfinished = await seed(handle, now - 48 * HOUR_US, ['policy']);
        const untouched = await seed(handle, now - 48 * HOUR_US);
        const unknown = randomUUID();
        const result = await cli('eventpurge', recent.uuid, unfinished.uuid, unknown);
        assert.equal(result.code, 0, result.stderr);
        assert.equal(result.stdout, 'purged 1 event\n');
        assert.match(result.stderr, new RegExp(`kept ${unfinished.uuid}: .*--force`));
        assert.match(result.stderr, new RegExp(`no event ${unknown}`));
        assert.deepEqual(new Set(await remainingEvents(handle)), new Set([unfinished.uuid, untouched.uuid]));
        const forced = await cli('eventpurge', '--force', unfinished.uuid);
        assert.equal(forced.stdout, 'purged 1 event\n');
        assert.deepEqual(await remainingEvents(handle), [untouched.uuid]);
      });
    });
  });
}
