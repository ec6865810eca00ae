/**
 * NOTIFICATIONS_DATABASE_TIMEOUT on PostgreSQL, as the server opens its database: a statement
 * the server works on too long is cancelled there (statement_timeout), and one whose server
 * went silent is given up by the client, its connection dropped rather than handed on.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';
import { describeOn, POSTGRES, POSTGRES_TEST_URL } from '../support/database.js';
import { startDatabaseProxy } from '../support/database-proxy.js';

const TIMEOUT_MS = 300;

describeOn(POSTGRES, 'the database time-out on statements (PostgreSQL)', () => {
  it('a statement that runs too long is cancelled by the server: unavailable, within about the time-out', async () => {
    const handle = openDatabase(POSTGRES_TEST_URL!, { timeoutMs: TIMEOUT_MS, boundStatements: true });
    try {
      const started = performance.now();
      await assert.rejects(sql`select pg_sleep(5)`.execute(handle.db), (error: unknown) => isDatabaseUnavailable(error));
      const elapsed = performance.now() - started;
      assert.ok(elapsed < TIMEOUT_MS + 1_000, `given up after ${elapsed.toFixed(0)} ms`);
      assert.equal((await sql<{ one: number }>`select 1 as one`.execute(handle.db)).rows[0]?.one, 1, 'and the next statement runs');
    } finally {
      await handle.close();
    }
  });

  it('a statement whose server went silent is given up by the client, and its connection is not used again', async () => {
    const proxy = await startDatabaseProxy(POSTGRES_TEST_URL!);
    const handle = openDatabase(proxy.url, { timeoutMs: TIMEOUT_MS, boundStatements: true });
    try {
      const pid = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(handle.db)).rows[0]!.pid;
      const before = await pid();
      proxy.hold();
      const started = performance.now();
      await assert.rejects(sql`select 1`.execute(handle.db), (error: unknown) => isDatabaseUnavailable(error));
      const elapsed = performance.now() - started;
      assert.ok(elapsed < TIMEOUT_MS + 1_000, `given up after ${elapsed.toFixed(0)} ms`);
      proxy.release();
      assert.notEqual(await pid(), before, 'a new connection: the silent one was dropped, not handed to the next caller');
    } finally {
      proxy.release();
      await handle.close();
      await proxy.close();
    }
  });
});
