import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import SQLite from 'better-sqlite3';
import { SYNC_SOON_MS, WalSync } from '../../src/db/wal-sync.js';

/** A SQLite file in WAL mode with a table `t`, removed after the test; the path of its log. */
function databaseInWal(t: TestContext): { database: SQLite.Database; walPath: string } {
  const dir = mkdtempSync(join(tmpdir(), 'wal-sync-'));
  const database = new SQLite(join(dir, 'db.sqlite3'));
  t.after(() => {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  });
  database.pragma('journal_mode = WAL');
  database.exec('create table t (x integer)');
  return { database, walPath: join(dir, 'db.sqlite3-wal') };
}

describe('syncing the SQLite write-ahead log', () => {
  it('syncs a real log, and calls made during a sync share the one after it', async (t) => {
    const { database, walPath } = databaseInWal(t);
    const wal = new WalSync(walPath);
    const running = wal.sync();
    database.exec('insert into t values (1)');
    // This commit's frames may be newer than the running sync: they wait for the next one.
    const next = wal.sync();
    const alsoNext = wal.sync();
    assert.notEqual(next, running);
    assert.equal(alsoNext, next);
    await Promise.all([running, next]);
    const after = wal.sync();
    assert.notEqual(after, next);
    await after;
    await wal.close();
  });

  it('syncs soon once for the calls of a moment, not at once', async (t) => {
    const { database, walPath } = databaseInWal(t);
    // Read when a sync is asked for (once) and when it begins (once more).
    const reads: number[] = [];
    const changes = () => (reads.push(performance.now()), database.prepare('select total_changes() as n').get() as { n: number }).n;
    const wal = new WalSync(walPath, changes);
    const asked = performance.now();
    wal.syncSoon();
    wal.syncSoon();
    assert.equal(reads.length, 0, 'no sync at once');
    const deadline = Date.now() + 5_000;
    while (reads.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(reads.length, 2, 'one sync');
    assert.ok(reads[0]! - asked >= SYNC_SOON_MS - 1, `began ${reads[0]! - asked} ms after`);
    await wal.close();
  });

  it('fails once it cannot sync, naming the log, and every later sync with it, soon or not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wal-sync-'));
    try {
      const wal = new WalSync(join(dir, 'missing.sqlite3-wal'));
      await assert.rejects(wal.sync(), /cannot sync the SQLite write-ahead log .*missing\.sqlite3-wal/);
      await assert.rejects(wal.sync(), /cannot sync the SQLite write-ahead log/);
      assert.throws(() => wal.syncSoon(), /cannot sync the SQLite write-ahead log/);
      await wal.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
