/**
 * The event log as the admin CLI reads and trims it: events by date, their matches and
 * attempts, purging old events (also the server's retention purge), and match rows for
 * routing an event again.
 */
import type { ExpressionBuilder, Kysely } from 'kysely';
import { type AttemptsTable, type Database, type EventsTable, type MatchesTable, OPEN_STATES, UNFINISHED_STATES } from '../tables.js';

/** A place in the log's order (received, then uuid); `inclusive` when that event itself counts. */
export interface LogPosition {
  received: number;
  uuid: string;
  inclusive: boolean;
}

/**
 * The position of the oldest of the `count` most recent events received in [from, to], or
 * undefined when the window holds fewer than `count`.
 */
export async function oldestOfMostRecentEvents(
  db: Kysely<Database>,
  window: { from: number; to: number },
  count: number,
): Promise<LogPosition | undefined> {
  if (count < 1) return undefined;
  const row = await db
    .selectFrom('events')
    .select(['received', 'uuid'])
    .where('received', '>=', window.from)
    .where('received', '<=', window.to)
    .orderBy('received', 'desc')
    .orderBy('uuid', 'desc')
    .offset(count - 1)
    .limit(1)
    .executeTakeFirst();
  return row && { ...row, inclusive: true };
}

/** Up to `limit` events from `position` on, received no later than `to`, oldest first. */
export async function eventsFromPosition(db: Kysely<Database>, position: LogPosition, to: number, limit: number): Promise<EventsTable[]> {
  return db
    .selectFrom('events')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb('received', '>', position.received),
        eb.and([eb('received', '=', position.received), eb('uuid', position.inclusive ? '>=' : '>', position.uuid)]),
      ]),
    )
    .where('received', '<=', to)
    .orderBy('received')
    .orderBy('uuid')
    .limit(limit)
    .execute();
}

/** The matches of these events, by event uuid, oldest first. */
export async function matchesOfEvents(db: Kysely<Database>, eventUuids: readonly string[]): Promise<Map<string, MatchesTable[]>> {
  const byEvent = new Map<string, MatchesTable[]>();
  if (eventUuids.length === 0) return byEvent;
  const rows = await db
    .selectFrom('matches')
    .selectAll()
    .where('event_uuid', 'in', [...eventUuids])
    .orderBy('created')
    .orderBy('uuid')
    .execute();
  for (const row of rows) byEvent.set(row.event_uuid, [...(byEvent.get(row.event_uuid) ?? []), row]);
  return byEvent;
}

/** The attempts of these events' matches, by match uuid, oldest first. */
export async function attemptsOfEvents(db: Kysely<Database>, eventUuids: readonly string[]): Promise<Map<string, AttemptsTable[]>> {
  const byMatch = new Map<string, AttemptsTable[]>();
  if (eventUuids.length === 0) return byMatch;
  const rows = await db
    .selectFrom('attempts')
    .innerJoin('matches', 'matches.uuid', 'attempts.match_uuid')
    .selectAll('attempts')
    .where('matches.event_uuid', 'in', [...eventUuids])
    .orderBy('attempts.at')
    .orderBy('attempts.uuid')
    .execute();
  for (const row of rows) byMatch.set(row.match_uuid, [...(byMatch.get(row.match_uuid) ?? []), row]);
  return byMatch;
}

function hasUnfinishedMatch(eb: ExpressionBuilder<Database & { e: EventsTable }, 'e'>) {
  return eb.exists(
    eb
      .selectFrom('matches')
      .select('matches.uuid')
      .whereRef('matches.event_uuid', '=', 'e.uuid')
      // A pull row not read yet keeps its event too, until retention expires it.
      .where('matches.state', 'in', [...OPEN_STATES]),
  );
}

/**
 * With one writer for the whole database (SQLite), a purge, whose batches each hold it, steps
 * aside this long after each full batch, so that the service's waiting writes get in.
 */
export const ONE_WRITER_PAUSE_MS = 100;

export interface PurgeOptions {
  /** Also events with a match still waiting for the policy or delivery (the CLI's `--force`). */
  force: boolean;
  /**
   * Skip the events another purge is deleting right now (`FOR UPDATE SKIP LOCKED`) instead of
   * waiting for it and then finding them gone: concurrent purges share the work. Only where
   * the database has the capability (PostgreSQL).
   */
  skipLocked: boolean;
}

export interface PurgedEvents {
  /** The events deleted. */
  eventUuids: string[];
  /** Their matches, deleted with them. */
  matches: number;
}

/**
 * Deletes up to `limit` of the oldest events received before `before`, in one transaction;
 * their matches and attempts go with them (ON DELETE CASCADE). Events with a match still
 * waiting for the policy or delivery are skipped unless `force`.
 *
 * The events are chosen (and counted) first, then deleted: a round that finds nothing takes no
 * write lock (SQLite). Chosen with `skipLocked` on PostgreSQL, they stay locked until the
 * commit, so no match can be added to them meanwhile and their match count holds; the delete
 * checks the matches again, since a finished match may have been queued again (a retry) after
 * the choice was made.
 */
export async function purgeOldestEventsBefore(
  db: Kysely<Database>,
  before: number,
  limit: number,
  options: PurgeOptions,
): Promise<PurgedEvents> {
  return db.transaction().execute(async (tx) => {
    let chosen = tx
      .selectFrom('events as e')
      .select((eb) => [
        'e.uuid',
        eb.selectFrom('matches').select(eb.fn.countAll<number>().as('n')).whereRef('matches.event_uuid', '=', 'e.uuid').as('matches'),
      ])
      .where('e.received', '<', before);
    if (!options.force) chosen = chosen.where((eb) => eb.not(hasUnfinishedMatch(eb)));
    chosen = chosen.orderBy('e.received').orderBy('e.uuid').limit(limit);
    if (options.skipLocked) chosen = chosen.forUpdate().skipLocked();
    const candidates = await chosen.execute();
    if (candidates.length === 0) return { eventUuids: [], matches: 0 };

    let doomed = tx.deleteFrom('events as e').where(
      'e.uuid',
      'in',
      candidates.map((c) => c.uuid),
    );
    if (!options.force) doomed = doomed.where((eb) => eb.not(hasUnfinishedMatch(eb)));
    const deleted = new Set((await doomed.returning('uuid').execute()).map((r) => r.uuid));
    const matches = candidates.reduce((sum, c) => sum + (deleted.has(c.uuid) ? Number(c.matches) : 0), 0);
    return { eventUuids: [...deleted], matches };
  });
}

/** How many events received before `before` have a match still waiting for the policy or delivery. */
export async function countUnfinishedEventsBefore(db: Kysely<Database>, before: number): Promise<number> {
  const row = await db
    .selectFrom('events as e')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('e.received', '<', before)
    .where((eb) => hasUnfinishedMatch(eb))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Deletes these events (and, by cascade, their matches and attempts); returns the uuids deleted. */
export async function purgeEventsWithUuids(db: Kysely<Database>, uuids: readonly string[], force: boolean): Promise<string[]> {
  if (uuids.length === 0) return [];
  const rows = await db
    .deleteFrom('events')
    .where('uuid', 'in', (eb) => {
      let chosen = eb
        .selectFrom('events as e')
        .select('e.uuid')
        .where('e.uuid', 'in', [...uuids]);
      if (!force) chosen = chosen.where((e) => e.not(hasUnfinishedMatch(e)));
      return chosen;
    })
    .returning('uuid')
    .execute();
  return rows.map((r) => r.uuid);
}

/** Which of these uuids name logged events. */
export async function existingEventUuids(db: Kysely<Database>, uuids: readonly string[]): Promise<Set<string>> {
  if (uuids.length === 0) return new Set();
  const rows = await db
    .selectFrom('events')
    .select('uuid')
    .where('uuid', 'in', [...uuids])
    .execute();
  return new Set(rows.map((r) => r.uuid));
}

/** The subscriptions that still have a match for this event waiting for the policy or delivery. */
export async function subscriptionsWithUnfinishedMatch(db: Kysely<Database>, eventUuid: string): Promise<Set<string>> {
  const rows = await db
    .selectFrom('matches')
    .select('subscription_uuid')
    .where('event_uuid', '=', eventUuid)
    .where('state', 'in', [...UNFINISHED_STATES])
    .execute();
  return new Set(rows.map((r) => r.subscription_uuid));
}
