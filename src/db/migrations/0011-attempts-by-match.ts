/**
 * `attempts` keyed by (match_uuid, at, uuid), the order they are read in (a match's attempts,
 * oldest first) and deleted in (with their match), instead of by uuid alone, which nothing
 * looks rows up by. On SQLite the table is WITHOUT ROWID: the rows live in that key's B-tree,
 * where before a row was written to three (the table's rowid tree, the uuid key's index, and
 * `attempts_match`), each a page rewritten in the log at every commit that recorded an
 * attempt. On PostgreSQL the key replaces both indexes. SQLite cannot change a table's key in
 * place: the table is copied into a new one.
 * Frozen, as every migration is; it imports nothing from the application.
 */
import { type Kysely, PostgresIntrospector, sql } from 'kysely';

function onPostgres(db: Kysely<unknown>): boolean {
  return db.introspection instanceof PostgresIntrospector;
}

const COLUMNS = sql.raw('uuid, match_uuid, stage, at, status, error, duration_ms');

export async function up(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) {
    await sql`alter table attempts drop constraint attempts_pkey`.execute(db);
    await sql`alter table attempts add constraint attempts_pkey primary key (match_uuid, at, uuid)`.execute(db);
    await sql`drop index attempts_match`.execute(db);
    return;
  }
  await rebuild(db, sql`primary key (match_uuid, at, uuid)) without rowid`);
  await sql`drop index if exists attempts_match`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) {
    await sql`alter table attempts drop constraint attempts_pkey`.execute(db);
    await sql`alter table attempts add constraint attempts_pkey primary key (uuid)`.execute(db);
  } else {
    await rebuild(db, sql`primary key (uuid))`);
  }
  await sql`create index attempts_match on attempts (match_uuid, at)`.execute(db);
}

/** SQLite: `attempts` made again with `key` (the key's clause, the table's end), its rows copied. */
async function rebuild(db: Kysely<unknown>, key: ReturnType<typeof sql>): Promise<void> {
  await sql`create table attempts_rebuilt (
      uuid varchar(36) not null,
      match_uuid varchar(36) not null references matches (uuid) on delete cascade,
      stage varchar(8) not null,
      at bigint not null,
      status integer,
      error text,
      duration_ms integer not null,
      ${key}`.execute(db);
  await sql`insert into attempts_rebuilt (${COLUMNS}) select ${COLUMNS} from attempts`.execute(db);
  await sql`drop table attempts`.execute(db);
  await sql`alter table attempts_rebuilt rename to attempts`.execute(db);
}
