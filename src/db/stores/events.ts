/**
 * The events table and the match rows written with an event: the event log.
 */
import { type Kysely, sql } from 'kysely';
import { timeOrderedUuid } from '../../uuid.js';
import { chunks } from '../chunks.js';
import type { Database, EventsTable, MatchesTable } from '../tables.js';

export type EventRow = EventsTable;
export type MatchRow = MatchesTable;

/** A new match of a logged event, waiting for the policy stage now. */
export function pendingMatch(eventUuid: string, subscription: { uuid: string; owner: string }, now: number): MatchRow {
  return {
    uuid: timeOrderedUuid(),
    event_uuid: eventUuid,
    subscription_uuid: subscription.uuid,
    owner: subscription.owner,
    state: 'policy',
    policy_code: null,
    target_code: null,
    created: now,
    due: now,
    locked_until: null,
    locked_by: null,
    attempts: 0,
    updated: now,
    cursor: null,
  };
}

export interface LoggedEvent {
  uuid: string;
  matches: number;
  duplicate: boolean;
}

export interface EventToLog {
  event: EventRow;
  matches: readonly MatchRow[];
}

/**
 * Logs an event with its match rows, unless an event with the same (source, id) is already
 * logged (by anyone, in this transaction or another): then nothing is written and that event
 * is returned as a duplicate. The unique index decides, so new events cost no look-up.
 */
export async function logEvent(db: Kysely<Database>, event: EventRow, matches: readonly MatchRow[]): Promise<LoggedEvent> {
  return (await logEvents(db, [{ event, matches }]))[0]!;
}

/**
 * `logEvent` for many events at once, in as few statements as the parameter limits allow:
 * the receive path writes whatever arrived together this way. Of two events with the same
 * (source, id) in one call, the first is logged and the second is its duplicate.
 */
export async function logEvents(db: Kysely<Database>, entries: readonly EventToLog[]): Promise<LoggedEvent[]> {
  const inserted = new Set<string>();
  for (const chunk of chunks(
    // Every row with every column: a row without one would be written with DEFAULT, which SQLite refuses in a multi-row insert.
    entries.map((e) => ({ ...e.event, traceparent: e.event.traceparent ?? null })),
    EVENT_ROWS_PER_STATEMENT,
  )) {
    const rows = await db
      .insertInto('events')
      .values(chunk)
      .onConflict((conflict) => conflict.columns(['source', 'event_id']).doNothing())
      .returning('uuid')
      .execute();
    for (const row of rows) inserted.add(row.uuid);
  }
  await insertMatches(
    db,
    entries.flatMap((e) => (inserted.has(e.event.uuid) ? e.matches : [])),
  );
  return loggedEvents(db, entries, inserted);
}

/**
 * `logEvents` in one statement, however many events: PostgreSQL only (a data-modifying WITH,
 * and each column passed as one array). Being one statement it needs no transaction of its
 * own (see group-commit.ts): on PostgreSQL, where each statement is a round trip, logging what
 * arrived together went from four statements (BEGIN, two inserts, COMMIT) to one.
 */
export async function logEventsInOneStatement(db: Kysely<Database>, entries: readonly EventToLog[]): Promise<LoggedEvent[]> {
  const events = entries.map((e) => e.event);
  const matches = entries.flatMap((e) => e.matches);
  const column = <R, K extends keyof R>(rows: readonly R[], key: K) => rows.map((row) => row[key]);
  const { rows } = await sql<{ uuid: string }>`
    with new_events as (
      insert into events (uuid, source, event_id, type, spec_version, body, received, traceparent)
      select * from unnest(
        ${column(events, 'uuid')}::text[], ${column(events, 'source')}::text[], ${column(events, 'event_id')}::text[],
        ${column(events, 'type')}::text[], ${column(events, 'spec_version')}::text[], ${column(events, 'body')}::text[],
        ${column(events, 'received')}::bigint[], ${events.map((e) => e.traceparent ?? null)}::text[])
      on conflict (source, event_id) do nothing
      returning uuid
    ), new_matches as (
      insert into matches (uuid, event_uuid, subscription_uuid, owner, state, policy_code, target_code, created, due,
        locked_until, locked_by, attempts, updated)
      select * from unnest(
        ${column(matches, 'uuid')}::text[], ${column(matches, 'event_uuid')}::text[], ${column(matches, 'subscription_uuid')}::text[],
        ${column(matches, 'owner')}::text[], ${column(matches, 'state')}::text[], ${column(matches, 'policy_code')}::integer[],
        ${column(matches, 'target_code')}::integer[], ${column(matches, 'created')}::bigint[], ${column(matches, 'due')}::bigint[],
        ${column(matches, 'locked_until')}::bigint[], ${column(matches, 'locked_by')}::text[], ${column(matches, 'attempts')}::integer[],
        ${column(matches, 'updated')}::bigint[]) as m (uuid, event_uuid, subscription_uuid, owner, state, policy_code, target_code,
          created, due, locked_until, locked_by, attempts, updated)
      where m.event_uuid in (select uuid from new_events)
    )
    select uuid from new_events`.execute(db);
  return loggedEvents(db, entries, new Set(rows.map((row) => row.uuid)));
}

/** What logging `entries` came to, given which of their events were `inserted`: the others are duplicates. */
async function loggedEvents(db: Kysely<Database>, entries: readonly EventToLog[], inserted: ReadonlySet<string>): Promise<LoggedEvent[]> {
  const results: LoggedEvent[] = [];
  for (const { event, matches } of entries) {
    results.push(
      inserted.has(event.uuid)
        ? { uuid: event.uuid, matches: matches.length, duplicate: false }
        : (await findEventBySourceAndId(db, event.source, event.event_id))!,
    );
  }
  return results;
}

export async function insertMatches(db: Kysely<Database>, rows: readonly MatchRow[]): Promise<void> {
  for (const chunk of chunks(rows, MATCH_ROWS_PER_STATEMENT)) await db.insertInto('matches').values(chunk).execute();
}

// Both databases take at least 32,766 parameters per statement; events have 8 columns, matches 13.
const EVENT_ROWS_PER_STATEMENT = 2_000;
const MATCH_ROWS_PER_STATEMENT = 1_000;

export async function findEventBySourceAndId(db: Kysely<Database>, source: string, eventId: string): Promise<LoggedEvent | undefined> {
  const row = await db
    .selectFrom('events')
    .leftJoin('matches', 'matches.event_uuid', 'events.uuid')
    .select(['events.uuid', (eb) => eb.fn.count<number>('matches.uuid').as('matches')])
    .where('events.source', '=', source)
    .where('events.event_id', '=', eventId)
    .groupBy('events.uuid')
    .executeTakeFirst();
  return row && { uuid: row.uuid, matches: Number(row.matches), duplicate: true };
}

/** The logged events with these uuids (their JSON documents, for the policy call and delivery). */
export async function eventsByUuid(db: Kysely<Database>, uuids: readonly string[]): Promise<Map<string, EventRow>> {
  if (uuids.length === 0) return new Map();
  const rows = await db
    .selectFrom('events')
    .selectAll()
    .where('uuid', 'in', [...new Set(uuids)])
    .execute();
  return new Map(rows.map((row) => [row.uuid, row]));
}
