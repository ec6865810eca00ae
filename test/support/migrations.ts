/**
 * A database made at an earlier version of the schema, for the tests of a migration: the
 * migrations before it run by Kysely's migrator, as `dbsync` of that version would have.
 */
import assert from 'node:assert/strict';
import { Migrator } from 'kysely/migration';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { MIGRATIONS } from '../../src/db/migrations/index.js';

/** A migrator of `handle` that knows only the migrations `knows` keeps (by name). */
export function migratorOf(handle: DatabaseHandle, knows: (name: string) => boolean): Migrator {
  const migrations = Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => knows(name)));
  return new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => migrations },
    ...(handle.schema ? { migrationTableSchema: handle.schema } : {}),
  });
}

/** Migrates `handle`'s new database up to, not including, migration `next`. */
export async function migrateBefore(handle: DatabaseHandle, next: string): Promise<void> {
  if (handle.schema) await handle.db.schema.createSchema(handle.schema).ifNotExists().execute();
  const { error } = await migratorOf(handle, (name) => name < next).migrateToLatest();
  assert.equal(error, undefined);
}
