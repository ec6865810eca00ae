import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { WalSync } from '../../src/db/wal-sync.js';

describe('syncing the SQLite write-ahead log', () => {
  it('syncs a real log, and calls made during a sync share the one after it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wal-sync-'));
    const database = new SQLite(join(dir, 'db.sqlite3'));
    try {
      database.pragma('journal_mode = WAL');
      database.exec('create table t (x integer)');
      const wal = new WalSync(join(dir, 'db.sqlite3-wal'));
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
    } finally {
      database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails once it cannot sync, naming the log, and every later sync with it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wal-sync-'));
    try {
      const wal = new WalSync(join(dir, 'missing.sqlite3-wal'));
      await assert.rejects(wal.sync(), /cannot sync the SQLite write-ahead log .*missing\.sqlite3-wal/);
      await assert.rejects(wal.sync(), /cannot sync the SQLite write-ahead log/);
      await wal.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
