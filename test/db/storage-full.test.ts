/**
 * The database refusing writes for lack of space, for real: SQLite on a small tmpfs filled to
 * the brim, PostgreSQL answering SQLSTATE 53100 (disk_full) from a trigger on the events table
 * of the test's own schema (filling the shared server's disk is not an option). The refusal
 * surfaces as the database's own error, the handle's storage watch says full until a write
 * succeeds again (its own probe, with no other write), and the handle goes on once there is space.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { it } from 'node:test';
import pg from 'pg';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { syncSchema } from '../../src/db/migrate.js';
import { isStorageFull, StorageWatch } from '../../src/db/storage-full.js';
import type { EventsTable } from '../../src/db/tables.js';
import { EventLogBatch } from '../../src/receive/event-log-batch.js';
import { createPostgres, describeOn, POSTGRES, POSTGRES_TEST_URL } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { mountSmallFilesystem, SMALL_FILESYSTEM } from '../support/small-filesystem.js';

/** An event of about `bytes` bytes, as /receive logs it (with no match). */
function event(bytes: number): EventsTable {
  const id = randomUUID();
  return {
    uuid: randomUUID(),
    source: '/storage-full',
    event_id: id,
    type: 'org.example.full',
    spec_version: '1.0',
    body: JSON.stringify({ specversion: '1.0', id, source: '/storage-full', type: 'org.example.full', data: 'x'.repeat(bytes) }),
    received: Date.now() * 1000,
  };
}

/** Logs events until one is refused; resolves with that refusal. */
async function logUntilRefused(log: EventLogBatch, bytes: number): Promise<unknown> {
  for (let i = 0; i < 10_000; i++) {
    try {
      await log.log({ event: event(bytes), matches: [] });
    } catch (error) {
      return error;
    }
  }
  throw new Error('10,000 events were logged without a refusal');
}

/** A watch whose reports are kept, in order. */
function recordingWatch(): { storage: StorageWatch; reports: string[] } {
  const reports: string[] = [];
  return { storage: new StorageWatch({ full: () => reports.push('full'), recovered: () => reports.push('recovered') }), reports };
}

const countEvents = async (handle: DatabaseHandle) =>
  Number(
    (
      await handle.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describeOn(SMALL_FILESYSTEM, 'SQLite on a full disk', () => {
  it("surfaces SQLITE_FULL (not the ROLLBACK's 'no transaction is active'), says full until a write succeeds, and goes on", async () => {
    const volume = mountSmallFilesystem(4 * 1024 * 1024);
    try {
      const { storage, reports } = recordingWatch();
      const handle = openDatabase(`sqlite:${join(volume.dir, 'notifications.sqlite3')}`, { storage });
      try {
        await syncSchema(handle);
        volume.fillLeaving(256 * 1024);
        const log = new EventLogBatch(handle);
        const refusal = await logUntilRefused(log, 16 * 1024);
        assert.ok(refusal instanceof Error);
        assert.equal((refusal as { code?: unknown }).code, 'SQLITE_FULL', String(refusal));
        assert.match(refusal.message, /database or disk is full/);
        assert.ok(isStorageFull(refusal));
        assert.equal(handle.storage.full, true, 'full after the refusal');
        const kept = await countEvents(handle);

        // Refused again while full; a read still answers, and the refused writes left nothing.
        await assert.rejects(log.log({ event: event(16 * 1024), matches: [] }), (error) => isStorageFull(error));
        assert.equal(await countEvents(handle), kept);
        assert.equal(handle.storage.full, true);
        assert.deepEqual(reports, ['full'], 'not said to take writes while none succeeded');

        // With no write of ours, the watch's own probe finds the space, and leaves nothing behind.
        volume.free();
        await eventually(() => !handle.storage.full, 'the probe finds the space freed', 10_000);
        assert.deepEqual(reports, ['full', 'recovered']);
        assert.equal(await countEvents(handle), kept);
        await log.log({ event: event(16 * 1024), matches: [] });
        assert.equal(await countEvents(handle), kept + 1);
      } finally {
        await handle.close();
      }
    } finally {
      volume.unmount();
    }
  });
});

describeOn(POSTGRES, 'PostgreSQL refusing writes with 53100 disk_full', () => {
  it('surfaces 53100 as storage full, says full until a write succeeds, and goes on', async () => {
    const database = await createPostgres(POSTGRES_TEST_URL!);
    const { storage, reports } = recordingWatch();
    const handle = openDatabase(database.url, { storage });
    const admin = new pg.Client({ connectionString: database.url.replace(/[?&]schema=[^&]*/, '') });
    await admin.connect();
    try {
      await syncSchema(handle);
      const schema = handle.schema!;
      const log = new EventLogBatch(handle);
      await log.log({ event: event(100), matches: [] });
      assert.equal(handle.storage.full, false);
      await admin.query(`create function "${schema}".disk_full() returns trigger language plpgsql as $$
        begin raise exception 'could not extend file: No space left on device' using errcode = '53100'; end $$`);
      await admin.query(
        `create trigger disk_full before insert on "${schema}".events for each row execute function "${schema}".disk_full()`,
      );

      const refusal = await logUntilRefused(log, 100);
      assert.equal((refusal as { code?: unknown }).code, '53100', String(refusal));
      assert.ok(isStorageFull(refusal));
      assert.equal(handle.storage.full, true);
      assert.equal(await countEvents(handle), 1);
      assert.deepEqual(reports, ['full'], 'not said to take writes while none succeeded');

      await admin.query(`drop trigger disk_full on "${schema}".events`);
      await eventually(() => !handle.storage.full, 'the probe finds the space freed', 10_000);
      assert.deepEqual(reports, ['full', 'recovered']);
      assert.equal(await countEvents(handle), 1);
      await log.log({ event: event(100), matches: [] });
      assert.equal(await countEvents(handle), 2);
    } finally {
      await admin.end();
      await handle.close();
      await database.cleanup();
    }
  });
});
