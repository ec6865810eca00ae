/**
 * Pull delivery's rows: made readable with a cursor, read after a cursor, acknowledged up to
 * one, and expired when never read. A readable row (`pending`) is no runner's work: claims take
 * only `policy` and `deliver` rows, and the queue gauges count only those.
 *
 * Cursors must never let a reader skip a row: a reader that has seen cursor 7 asks for rows
 * after 7, so a row given cursor 6 that commits after the reader read 7 would be lost to it (the
 * classic outbox gap). Cursors are therefore taken from one counter row (`pull_cursor`) updated
 * in the transaction that makes the rows readable: on PostgreSQL the update holds the counter
 * row's lock until the commit, so the next transaction to take cursors waits for this one to
 * commit and only then reads the counter; cursor order is commit order. SQLite has one writer,
 * which gives the same. The counter never goes back, even when retention deletes the rows with
 * the highest cursors (a max() over the rows would reuse them).
 */
import { type Kysely, sql } from 'kysely';
import { chunks } from '../chunks.js';
import type { Capabilities } from '../connect.js';
import { recordAttempts } from './matches.js';
import { readableNotification } from '../subscription-notifications.js';
import type { Database } from '../tables.js';

/** Rows per cursor-assigning statement: two parameters each, and the uuid list. */
const ROWS_PER_STATEMENT = 2_000;

/**
 * Gives the rows `uuids` (just settled `pending`) their cursors, in the order they were created
 * (time-ordered uuids), and on PostgreSQL tells every instance's readers on commit. Returns
 * the subscriptions that have new readable rows.
 */
export async function makeReadable(db: Kysely<Database>, capabilities: Capabilities, uuids: readonly string[]): Promise<string[]> {
  if (uuids.length === 0) return [];
  const taken = await db
    .updateTable('pull_cursor')
    .set((eb) => ({ last: eb('last', '+', uuids.length) }))
    .where('id', '=', 1)
    .returning('last')
    .executeTakeFirstOrThrow();
  let next = Number(taken.last) - uuids.length + 1;
  const subscriptions = new Set<string>();
  for (const chunk of chunks([...uuids].sort(), ROWS_PER_STATEMENT)) {
    const cases = chunk.map((uuid) => sql`when ${uuid} then cast(${next++} as bigint)`);
    const rows = await db
      .updateTable('matches')
      .set({ cursor: sql<number>`case uuid ${sql.join(cases, sql` `)} end` })
      .where('uuid', 'in', chunk)
      .returning('subscription_uuid')
      .execute();
    for (const row of rows) subscriptions.add(row.subscription_uuid);
  }
  if (capabilities.notify && subscriptions.size > 0) await readableNotification([...subscriptions]).execute(db);
  return [...subscriptions];
}

export interface ReadableRow {
  uuid: string;
  cursor: number;
  event_uuid: string;
  spec_version: string;
  body: string;
}

/** Up to `limit` readable rows of a subscription after `after`, in cursor order, with their events. */
export async function readableAfter(db: Kysely<Database>, subscription: string, after: number, limit: number): Promise<ReadableRow[]> {
  const rows = await db
    .selectFrom('matches')
    .innerJoin('events', 'events.uuid', 'matches.event_uuid')
    .select(['matches.uuid', 'matches.cursor', 'matches.event_uuid', 'events.spec_version', 'events.body'])
    .where('matches.subscription_uuid', '=', subscription)
    .where('matches.cursor', '>', after)
    .where('matches.state', 'in', ['pending', 'delivered'])
    .orderBy('matches.cursor')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ ...row, cursor: Number(row.cursor) }));
}

/**
 * The reader has read up to `cursor`: its pending rows up to there are delivered, each with one
 * attempt of stage `pull`. Returns how many.
 */
export async function acknowledgeUpTo(
  db: Kysely<Database>,
  capabilities: Capabilities,
  subscription: string,
  cursor: number,
  at: number,
): Promise<number> {
  const acknowledged = await db
    .updateTable('matches')
    .set({ state: 'delivered', updated: at })
    .where('subscription_uuid', '=', subscription)
    .where('cursor', '<=', cursor)
    .where('state', '=', 'pending')
    .returning('uuid')
    .execute();
  await recordAttempts(
    db,
    capabilities,
    acknowledged.map(({ uuid }) => ({ matchUuid: uuid, stage: 'pull', at, status: null, error: null, durationMs: 0 })),
  );
  return acknowledged.length;
}

/** The highest readable cursor of each of these subscriptions that has one. */
export async function latestCursors(db: Kysely<Database>, subscriptions: readonly string[]): Promise<Map<string, number>> {
  const latest = new Map<string, number>();
  for (const chunk of chunks(subscriptions, ROWS_PER_STATEMENT)) {
    const rows = await db
      .selectFrom('matches')
      .select(['subscription_uuid', (eb) => eb.fn.max('cursor').as('cursor')])
      .where('subscription_uuid', 'in', chunk)
      .where('cursor', 'is not', null)
      .where('state', 'in', ['pending', 'delivered'])
      .groupBy('subscription_uuid')
      .execute();
    for (const row of rows) if (row.cursor !== null) latest.set(row.subscription_uuid, Number(row.cursor));
  }
  return latest;
}

/**
 * Pull rows never read and created before `before` are expired (at most `limit` at once), so
 * that retention can purge their events. Returns how many.
 */
export async function expireUnread(db: Kysely<Database>, before: number, at: number, limit: number): Promise<number> {
  const result = await db
    .updateTable('matches')
    .set({ state: 'expired', updated: at })
    .where('uuid', 'in', (eb) =>
      eb.selectFrom('matches').select('uuid').where('state', '=', 'pending').where('created', '<', before).limit(limit),
    )
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
