/**
 * The SQLite connection's settings that keep a commit's disk work small: statement journals
 * in memory, a new file made with 1 KiB pages (each page a commit changes is written to the
 * log whole), and a log checkpointed at 40 MB rather than at SQLite's 1,000 pages, whatever the
 * file's page size.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { syncSchema } from '../../src/db/migrate.js';
import type { Database } from '../../src/db/tables.js';
import { createSqlite, makeSqliteFileWithPages, openTestDatabase, SQLITE } from '../support/database.js';

const CHECKPOINT_BYTES = 40 * 1024 * 1024;

async function pragma(db: Kysely<Database>, name: string): Promise<number> {
  const { rows } = await sql<Record<string, number>>`pragma ${sql.raw(name)}`.execute(db);
  return rows[0]![name]!;
}

it('keeps statement journals in memory', async (t) => {
  const test = await openTestDatabase(SQLITE);
  t.after(() => test.close());
  assert.equal(await pragma(test.handle.db, 'temp_store'), 2, '2 is MEMORY');
});

it('makes a new file with 1 KiB pages, checkpointed at 40 MB of log', async (t) => {
  const test = await openTestDatabase(SQLITE);
  t.after(() => test.close());
  assert.equal(await pragma(test.handle.db, 'page_size'), 1024);
  assert.equal(await pragma(test.handle.db, 'wal_autocheckpoint'), CHECKPOINT_BYTES / 1024);
});

it('keeps the pages of a file made with 4 KiB ones, and checkpoints it at 40 MB of log too', async (t) => {
  const database = await createSqlite();
  t.after(() => database.cleanup());
  const path = database.url.slice('sqlite:'.length);
  makeSqliteFileWithPages(path, 4096);

  const handle = openDatabase(database.url);
  t.after(() => handle.close());
  await syncSchema(handle);
  assert.equal(await pragma(handle.db, 'page_size'), 4096);
  assert.equal(await pragma(handle.db, 'wal_autocheckpoint'), CHECKPOINT_BYTES / 4096);
});

it("lets the log grow past SQLite's default of 1,000 pages before a checkpoint", async (t) => {
  const test = await openTestDatabase(SQLITE);
  t.after(() => test.close());
  const path = test.database.url.slice('sqlite:'.length);
  await test.handle.write((tx) => sql`create table filler (text text)`.execute(tx));
  // 12 MB of rows, a commit per 400 KB: with SQLite's default the log would be checkpointed and
  // started again from its beginning at every 1,000 pages (1 MB), never growing much past them.
  const row = 'x'.repeat(4_096);
  for (let i = 0; i < 30; i++) {
    await test.handle.write(async (tx) => {
      for (let j = 0; j < 100; j++) await sql`insert into filler values (${row})`.execute(tx);
    });
  }
  const logBytes = statSync(`${path}-wal`).size;
  assert.ok(logBytes > 10_000_000, `the log holds ${logBytes} bytes`);
});
