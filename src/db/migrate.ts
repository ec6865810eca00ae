/**
 * Schema version checks and migration (Kysely's migrator: ordered, recorded, run under a lock,
 * so two `dbsync` at once is not an error: the second waits and finds nothing to do).
 */
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { DatabaseHandle } from './connect.js';
import { MIGRATIONS } from './migrations/index.js';
import { DatabaseUnavailable } from './unavailable.js';

export interface SchemaStatus {
  /** Migrations this program knows that the database has not run. */
  pending: string[];
  /** Migrations the database has run that this program does not know (a newer version's). */
  unknown: string[];
}

const MIGRATION_TABLE = 'kysely_migration';

export async function schemaStatus(handle: DatabaseHandle): Promise<SchemaStatus> {
  const known = Object.keys(MIGRATIONS);
  if (!(await migrationTableExists(handle))) return { pending: known, unknown: [] };
  const rows = await sql<{ name: string }>`select name from ${sql.table(MIGRATION_TABLE)}`.execute(handle.db);
  const applied = new Set(rows.rows.map((r) => r.name));
  return { pending: known.filter((name) => !applied.has(name)), unknown: [...applied].filter((name) => !known.includes(name)) };
}

/**
 * Asked of this schema's catalogue alone: Kysely's introspection reads every table of every
 * schema, and fails when another schema's table is renamed or dropped at that moment.
 */
async function migrationTableExists(handle: DatabaseHandle): Promise<boolean> {
  const found = handle.capabilities.schemas
    ? await sql`select 1 from information_schema.tables where table_schema = ${handle.schema ?? 'public'} and table_name = ${MIGRATION_TABLE}`.execute(
        handle.db,
      )
    : await sql`select 1 from sqlite_master where type = 'table' and name = ${MIGRATION_TABLE}`.execute(handle.db);
  return found.rows.length > 0;
}

/**
 * PostgreSQL's undefined_table and invalid_schema_name: what the migrator's introspection of
 * every schema meets when another schema's table, or the schema itself, is dropped meanwhile.
 */
const INTROSPECTION_RACES = new Set(['42P01', '3F000']);
const MIGRATE_TRIES = 3;

/**
 * Runs every pending migration; returns the names it ran (none when already current). When
 * another process migrates at the same moment, one of the two may fail on the other's tables
 * (SQLite has no migration lock; PostgreSQL races on `create schema if not exists`): if the
 * schema is current afterwards, the work was done, and that is success.
 */
export async function syncSchema(handle: DatabaseHandle): Promise<string[]> {
  try {
    return await migrateRetryingRaces(handle);
  } catch (error) {
    // A database that did not answer has not been migrated by anyone: asking again would
    // only wait out the connect time-out a second time.
    if (error instanceof DatabaseUnavailable) throw error;
    if ((await schemaStatus(handle)).pending.length === 0) return [];
    throw error;
  }
}

/**
 * Kysely's migrator checks for its own tables by reading the columns of every table in the
 * database, which fails when a table or schema elsewhere is renamed or dropped meanwhile; the
 * check is made again, since nothing was migrated yet.
 */
async function migrateRetryingRaces(handle: DatabaseHandle): Promise<string[]> {
  for (let tries = 1; ; tries++) {
    try {
      return await migrate(handle);
    } catch (error) {
      if (tries >= MIGRATE_TRIES || !INTROSPECTION_RACES.has(String((error as { code?: unknown }).code))) throw error;
    }
  }
}

async function migrate(handle: DatabaseHandle): Promise<string[]> {
  if (handle.schema) {
    // Two `create schema if not exists` at once can both try: the loser fails on the unique
    // index of schema names (23505), and the schema exists all the same.
    await sql`create schema if not exists ${sql.id(handle.schema)}`.execute(handle.db).catch((error: { code?: string }) => {
      if (error.code !== '23505') throw error;
    });
  }
  const migrator = new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => MIGRATIONS },
    ...(handle.schema ? { migrationTableSchema: handle.schema } : {}),
  });
  const run = async () => {
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  };
  return handle.capabilities.migrationLock ? run() : inSqliteWriteLock(handle, run);
}

/**
 * Kysely runs SQLite migrations outside a transaction and takes no lock there, so another
 * process could see the tables half made and the migration not yet recorded. Holding the
 * write lock (BEGIN IMMEDIATE) for the whole run makes the others wait, then find it done.
 * (SQLite has one connection per process here, so the migrator's statements run inside it.)
 */
async function inSqliteWriteLock<T>(handle: DatabaseHandle, work: () => Promise<T>): Promise<T> {
  await sql`begin immediate`.execute(handle.db);
  try {
    const result = await work();
    await sql`commit`.execute(handle.db);
    return result;
  } catch (error) {
    await sql`rollback`.execute(handle.db);
    throw error;
  }
}
