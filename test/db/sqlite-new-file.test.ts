/**
 * Processes that open a new SQLite file together: SQLite refuses the switch to WAL at once, without
 * its busy wait, to a connection that finds another holding the write lock. Opening waits for
 * the lock instead, up to the database time-out. The lock is held by another process, as it
 * would be by a second `dbsync` (the waiting is a synchronous sleep).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { createSqlite } from '../support/database.js';

/**
 * Creates the file (still in rollback-journal mode), takes its write lock and says so; holds it
 * until SIGUSR2 (SIGUSR1 is node's debugger), then `ms` more. The signal is sent right before
 * the open under test starts, so the lock is held while it starts however late the test got to it.
 */
const HOLD_WRITE_LOCK = `
const SQLite = require('better-sqlite3');
const db = new SQLite(process.argv[1]);
db.exec('create table held (x)');
db.exec('begin immediate');
db.exec('insert into held values (1)');
const alive = setInterval(() => undefined, 60_000);
process.on('SIGUSR2', () => setTimeout(() => { db.exec('commit'); db.close(); clearInterval(alive); }, Number(process.argv[2])));
process.stdout.write('locked\\n');
`;

/**
 * Runs `body` on a new SQLite file whose write lock another process holds; `releaseLater` has it
 * let go `ms` after being called.
 */
async function whileAnotherProcessWrites(ms: number, body: (url: string, releaseLater: () => void) => Promise<void>): Promise<void> {
  const database = await createSqlite();
  const path = database.url.slice('sqlite:'.length);
  const holder = spawn(process.execPath, ['-e', HOLD_WRITE_LOCK, path, String(ms)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await once(holder.stdout!, 'data');
    await body(database.url, () => assert.ok(holder.kill('SIGUSR2'), 'the lock holder is there to signal'));
  } finally {
    holder.kill();
    if (holder.exitCode === null) await once(holder, 'exit');
    await database.cleanup();
  }
}

describe('opening a new SQLite file that another process is writing', () => {
  it('waits for the write lock instead of failing at once', () =>
    whileAnotherProcessWrites(1_000, async (url, releaseLater) => {
      releaseLater();
      const start = performance.now();
      // Opening is synchronous: the lock holder lets go while it waits.
      const handle = openDatabase(url, { timeoutMs: 15_000 });
      const waited = performance.now() - start;
      try {
        assert.ok(waited >= 500, `opened after ${waited.toFixed(0)} ms, while the lock was held for 1000 more`);
        const { rows } = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(handle.db);
        assert.deepEqual(rows, [{ journal_mode: 'wal' }]);
      } finally {
        await handle.close();
      }
    }));

  it('gives up after the database time-out', () =>
    // A time-out 2 s longer than the 5 s default: a lower bound, which load cannot break, tells
    // the two apart (the thread's start, a few hundred ms, counts towards both). The lock is held
    // far longer still: an open that waited for it would not throw.
    whileAnotherProcessWrites(60_000, async (url, releaseLater) => {
      releaseLater();
      const start = performance.now();
      assert.throws(() => openDatabase(url, { timeoutMs: 7_000 }), { code: 'SQLITE_BUSY' });
      const waited = performance.now() - start;
      assert.ok(waited >= 6_900, `gave up after ${waited.toFixed(0)} ms, before the 7 s time-out`);
    }));
});
