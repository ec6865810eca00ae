import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { SqliteError } from '../../src/db/sqlite-worker-dialect.js';
import { createSqlite } from '../support/database.js';
import { run } from '../support/processes.js';

describe('SQLite in a worker thread', () => {
  it('passes rows, changes and errors with their SQLite code across', async (t) => {
    const file = await createSqlite();
    const handle = openDatabase(file.url);
    t.after(async () => {
      await handle.close();
      await file.cleanup();
    });
    await sql`create table t (k text primary key, n integer)`.execute(handle.db);
    const inserted = await sql`insert into t values ('a', 1), ('b', 2)`.execute(handle.db);
    assert.equal(inserted.numAffectedRows, 2n);
    assert.deepEqual((await sql<{ k: string; n: number }>`select k, n from t order by k`.execute(handle.db)).rows, [{ k: 'a', n: 1 }, { k: 'b', n: 2 }]);
    await assert.rejects(sql`insert into t values ('a', 3)`.execute(handle.db), (error: unknown) => {
      assert.ok(error instanceof SqliteError);
      assert.equal(error.code, 'SQLITE_CONSTRAINT_PRIMARYKEY');
      return true;
    });
  });

  it('runs a transaction without another caller’s statements inside it', async (t) => {
    const file = await createSqlite();
    const handle = openDatabase(file.url);
    t.after(async () => {
      await handle.close();
      await file.cleanup();
    });
    await sql`create table t (n integer)`.execute(handle.db);
    const outside = [] as Array<Promise<unknown>>;
    await assert.rejects(
      handle.db.transaction().execute(async (tx) => {
        await sql`insert into t values (1)`.execute(tx);
        // Started while the transaction is open: must wait for it, not join it.
        outside.push(sql`insert into t values (2)`.execute(handle.db));
        await new Promise((resolve) => setTimeout(resolve, 20));
        throw new Error('roll back');
      }),
      /roll back/,
    );
    await Promise.all(outside);
    assert.deepEqual((await sql<{ n: number }>`select n from t`.execute(handle.db)).rows, [{ n: 2 }], 'the rollback took only its own row');
  });

  it('lets the process exit after close, used or not', async () => {
    const file = await createSqlite();
    try {
      const connect = JSON.stringify(new URL('../../src/db/connect.js', import.meta.url).href);
      for (const use of ['', "await (await import('kysely')).sql`select 1`.execute(handle.db);"]) {
        const script = `const { openDatabase } = await import(${connect}); const handle = openDatabase(${JSON.stringify(file.url)}); ${use} await handle.close();`;
        const finished = await run('--input-type=module', ['-e', script], {}, 10_000);
        assert.deepEqual([finished.code, finished.stderr], [0, '']);
      }
    } finally {
      await file.cleanup();
    }
  });
});
