/**
 * The SQLite connection's settings that keep a commit's disk work small: statement journals
 * in memory, and a log checkpointed every 10,000 pages rather than SQLite's 1,000.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { it } from 'node:test';
import { sql } from 'kysely';
import { openTestDatabase, SQLITE } from '../support/database.js';

const PAGE_BYTES = 4_096;

it('keeps statement journals in memory', async (t) => {
  const test = await openTestDatabase(SQLITE);
  t.after(() => test.close());
  const { rows } = await sql<{ temp_store: number }>`pragma temp_store`.execute(test.handle.db);
  assert.deepEqual(rows, [{ temp_store: 2 }], '2 is MEMORY');
});

it('lets the log grow past 1,000 pages before a checkpoint', async (t) => {
  const test = await openTestDatabase(SQLITE);
  t.after(() => test.close());
  const path = test.database.url.slice('sqlite:'.length);
  await test.handle.write((tx) => sql`create table filler (text text)`.execute(tx));
  // 3,000 pages of rows, a commit per 100: with SQLite's default the log would be checkpointed
  // and started again from its beginning at every 1,000 pages, never growing much past them.
  const page = 'x'.repeat(PAGE_BYTES);
  for (let i = 0; i < 30; i++) {
    await test.handle.write(async (tx) => {
      for (let j = 0; j < 100; j++) await sql`insert into filler values (${page})`.execute(tx);
    });
  }
  const logBytes = statSync(`${path}-wal`).size;
  assert.ok(logBytes > 2_500 * PAGE_BYTES, `the log holds ${logBytes} bytes`);
});
