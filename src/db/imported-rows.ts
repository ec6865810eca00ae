/**
 * Rows brought from another database (import-pacifica): each inserted unless its table holds a
 * row with the same key already, saying which were new; and the rows that were there, for the
 * importer to compare.
 */
import type { Kysely } from 'kysely';
import { chunks } from './chunks.js';
import type { Capabilities } from './connect.js';
import { notificationOf } from './subscription-notifications.js';
import { SUBSCRIPTION_ROWS_PER_STATEMENT } from './subscriptions.js';
import type { Database, EventsTable, MatchesTable, SubscriptionRow } from './tables.js';

// Both databases take at least 32,766 parameters a statement; events have 8 columns, matches 14.
const EVENT_ROWS_PER_STATEMENT = 2_000;
const MATCH_ROWS_PER_STATEMENT = 1_000;

/**
 * The subscriptions of `rows` whose uuid is new, inserted; the uuids of those inserted. On
 * PostgreSQL the other instances hear of each one on commit, as of any write.
 */
export async function insertNewSubscriptions(
  db: Kysely<Database>,
  capabilities: Capabilities,
  rows: readonly SubscriptionRow[],
): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const chunk of chunks(rows, SUBSCRIPTION_ROWS_PER_STATEMENT)) {
    const insert = db
      .insertInto('subscriptions')
      .values(chunk)
      .onConflict((conflict) => conflict.column('uuid').doNothing())
      .returning('uuid');
    const written = capabilities.notify
      ? await db
          .with('written', () => insert)
          .selectFrom('written')
          .select(['written.uuid', notificationOf('written.uuid')])
          .execute()
      : await insert.execute();
    for (const row of written) inserted.add(row.uuid);
  }
  return inserted;
}

/**
 * The events of `rows` new by uuid and by (source, id), inserted; the uuids of those inserted.
 * An event not inserted is either there already (by uuid) or shares its source and id with
 * another: `eventsByUuid` tells which.
 */
export async function insertNewEvents(db: Kysely<Database>, rows: readonly EventsTable[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const chunk of chunks(
    rows.map((row) => ({ ...row, traceparent: row.traceparent ?? null })),
    EVENT_ROWS_PER_STATEMENT,
  )) {
    const written = await db
      .insertInto('events')
      .values(chunk)
      .onConflict((conflict) => conflict.doNothing())
      .returning('uuid')
      .execute();
    for (const row of written) inserted.add(row.uuid);
  }
  return inserted;
}

/** The matches of `rows` whose uuid is new, inserted; the uuids of those inserted. */
export async function insertNewMatches(db: Kysely<Database>, rows: readonly MatchesTable[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const chunk of chunks(rows, MATCH_ROWS_PER_STATEMENT)) {
    const written = await db
      .insertInto('matches')
      .values(chunk)
      .onConflict((conflict) => conflict.column('uuid').doNothing())
      .returning('uuid')
      .execute();
    for (const row of written) inserted.add(row.uuid);
  }
  return inserted;
}

/** The matches with these uuids, as stored. */
export async function matchesByUuid(db: Kysely<Database>, uuids: readonly string[]): Promise<Map<string, MatchesTable>> {
  const found = new Map<string, MatchesTable>();
  for (const chunk of chunks(uuids, MATCH_ROWS_PER_STATEMENT)) {
    if (chunk.length === 0) continue;
    for (const row of await db.selectFrom('matches').selectAll().where('uuid', 'in', chunk).execute()) found.set(row.uuid, row);
  }
  return found;
}
