/**
 * Real databases for tests, each test isolated: SQLite in a fresh temporary file, PostgreSQL
 * in a fresh schema of the database `NOTIFICATIONS_TEST_DATABASE_URL` names (dropped after).
 * Without that variable only SQLite runs, and every PostgreSQL suite is reported as a skipped
 * test with the reason (`describeOn`), so that a run without it does not look complete.
 */

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { syncSchema } from '../../src/db/migrate.js';

export interface TestDatabase {
  /** The URL a server process or the CLI can be given. */
  readonly url: string;
  /** Removes the file or drops the schema. */
  cleanup(): Promise<void>;
}

export interface TestBackend {
  readonly name: 'sqlite' | 'postgres';
  /** Why this database's tests cannot run here; false when they can. */
  readonly skip: string | false;
  create(): Promise<TestDatabase>;
}

export const POSTGRES_TEST_URL = process.env.NOTIFICATIONS_TEST_DATABASE_URL;

const POSTGRES_SKIP = POSTGRES_TEST_URL ? false : 'PostgreSQL: set NOTIFICATIONS_TEST_DATABASE_URL';

export const POSTGRES: TestBackend = {
  name: 'postgres',
  skip: POSTGRES_SKIP,
  create: async () => {
    // A suite that forgot `describeOn` fails here, rather than passing without running.
    if (!POSTGRES_TEST_URL) throw new Error(`${POSTGRES_SKIP}: this suite should have been registered with describeOn`);
    return createPostgres(POSTGRES_TEST_URL);
  },
};

/** SQLite, which runs everywhere: a fresh file each time. */
export const SQLITE: TestBackend = { name: 'sqlite', skip: false, create: () => createSqlite() };

/** Every database, including those that cannot run here (see `skip`): register their suites with `describeOn`. */
export function testBackends(): TestBackend[] {
  return [SQLITE, POSTGRES];
}

/**
 * `describe(name, body)` on `backend`, or on anything else a suite needs (a browser, Docker: any
 * `{ skip }`); where it cannot run, a test reported as skipped with the reason instead (node's
 * test runner counts a skipped `describe` as no test at all).
 */
export function describeOn(backend: Pick<TestBackend, 'skip'>, name: string, body: () => void): void {
  if (backend.skip) test(name, { skip: backend.skip }, () => undefined);
  else describe(name, body);
}

/**
 * Makes the SQLite file at `path` empty, in WAL mode, with pages of `pageSize` bytes, as an
 * earlier version made every file (4 KiB, SQLite's default): the service keeps a file's pages.
 */
export function makeSqliteFileWithPages(path: string, pageSize: number): void {
  const file = new Database(path);
  try {
    file.pragma(`page_size = ${pageSize}`);
    file.pragma('journal_mode = WAL');
  } finally {
    file.close();
  }
}

/** A fresh SQLite file in its own temporary directory. */
export async function createSqlite(): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-test-'));
  return { url: `sqlite:${join(dir, 'notifications.sqlite3')}`, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** A fresh schema in the PostgreSQL database `base` names. */
export async function createPostgres(base: string): Promise<TestDatabase> {
  const schema = `test_${randomBytes(6).toString('hex')}`;
  const url = new URL(base);
  url.searchParams.set('schema', schema);
  return {
    url: url.toString(),
    cleanup: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      try {
        await client.query(`drop schema if exists "${schema}" cascade`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A database with the current schema, opened; `close` closes it and cleans up. */
export async function openTestDatabase(
  backend: TestBackend,
): Promise<{ database: TestDatabase; handle: DatabaseHandle; close(): Promise<void> }> {
  const database = await backend.create();
  const handle = openDatabase(database.url);
  await syncSchema(handle);
  return {
    database,
    handle,
    close: async () => {
      await handle.close();
      await database.cleanup();
    },
  };
}
