/**
 * PostgreSQL: pages of `matches` are filled to 80% by inserts, the rest kept for the row's
 * later versions. A claim, a release or a lease kept changes only `locked_until` and
 * `locked_by`, which no index holds: written on the same page, the new version is a heap-only
 * (HOT) update and gets no index entries. With pages packed full by the inserts, only about a
 * quarter of those updates found room on their page, and each of the others wrote an entry in
 * all four indexes of the table (see docs/benchmarks.md, What bounds each goal). Settlements
 * change `state`, which the queue's index holds, and get new entries whatever the room.
 * Existing pages keep their rows; the setting applies to the pages written from now on, and
 * needs no rewrite of the table. SQLite changes rows in place: nothing to do there.
 * Frozen, as every migration is; it imports nothing from the application.
 */
import { type Kysely, PostgresIntrospector, sql } from 'kysely';

/** Which database the migrator runs on, through Kysely's public API: its dialect's introspector. */
function onPostgres(db: Kysely<unknown>): boolean {
  return db.introspection instanceof PostgresIntrospector;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) await sql`alter table matches set (fillfactor = 80)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) await sql`alter table matches reset (fillfactor)`.execute(db);
}
