/**
 * The work queue as a scrape sees it: how many match rows wait in each unfinished state, and
 * when the oldest of them was created. One aggregate statement each, read at scrape time.
 */
import type { Kysely } from 'kysely';
import { type Database, type MatchState, UNFINISHED_STATES } from '../tables.js';

/** Rows per unfinished state; a state with none is 0. */
export async function queueDepth(db: Kysely<Database>): Promise<Map<MatchState, number>> {
  // Found through the (state, due) index: SQLite counts its entries alone, PostgreSQL also
  // checks each row's visibility (no index-only scan until the table is vacuumed).
  const rows = await db
    .selectFrom('matches')
    .select(['state', (eb) => eb.fn.countAll<number | string>().as('rows')])
    .where('state', 'in', [...UNFINISHED_STATES])
    .groupBy('state')
    .execute();
  const depth = new Map<MatchState, number>(UNFINISHED_STATES.map((state) => [state, 0]));
  for (const row of rows) depth.set(row.state, Number(row.rows));
  return depth;
}

/**
 * The `created` (µs) of the oldest row in each unfinished state; undefined when it has none.
 * One scalar subquery per state rather than GROUP BY, so that with an index on (state,
 * created) both databases read each `min()` off the first index entry. Schema version 1 has
 * no such index: the (state, due) index finds the unfinished rows, and each one is read.
 */
export async function oldestPendingCreated(db: Kysely<Database>): Promise<Map<MatchState, number | undefined>> {
  const row = await db
    .selectNoFrom((eb) =>
      UNFINISHED_STATES.map((state) =>
        eb
          .selectFrom('matches')
          .select((inner) => inner.fn.min<number | string | null>('created').as('created'))
          .where('state', '=', state)
          .as(state),
      ),
    )
    .executeTakeFirstOrThrow();
  const values = row as Record<string, number | string | null>;
  return new Map(
    UNFINISHED_STATES.map((state) => {
      const value = values[state];
      return [state, value === null || value === undefined ? undefined : Number(value)];
    }),
  );
}

/** Both, as the metrics' queue gauges read them. */
export function queueReader(db: Kysely<Database>): {
  depth: () => Promise<Map<MatchState, number>>;
  oldestCreated: () => Promise<Map<MatchState, number | undefined>>;
} {
  return { depth: () => queueDepth(db), oldestCreated: () => oldestPendingCreated(db) };
}
