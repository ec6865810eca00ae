/**
 * A transaction's BEGIN goes to PostgreSQL in the same write as its first statement, and a
 * transaction that sent nothing sends nothing at all. Counted at a proxy in front of the real
 * server: each chunk a client sends through it is one of its writes, since the client waits for
 * an answer after each.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { inOneRoundTrip } from '../../src/db/postgres-round-trip.js';
import type { Database } from '../../src/db/tables.js';
import { describeOn, openTestDatabase, POSTGRES } from '../support/database.js';
import { type DatabaseProxy, startDatabaseProxy } from '../support/database-proxy.js';

describeOn(POSTGRES, "a transaction's BEGIN with its first statement (PostgreSQL)", () => {
  let test: Awaited<ReturnType<typeof openTestDatabase>>;
  let proxy: DatabaseProxy;
  let handle: DatabaseHandle;
  let db: Kysely<Database>;
  before(async () => {
    test = await openTestDatabase(POSTGRES);
    await sql`create table begun (n int primary key, note text)`.execute(test.handle.db);
    proxy = await startDatabaseProxy(test.database.url);
    handle = openDatabase(proxy.url);
    db = handle.db;
    // One connection in the pool, made before anything is counted.
    await sql`select 1`.execute(db);
  });
  after(async () => {
    await handle.close();
    await proxy.close();
    await test.close();
  });

  beforeEach(() => sql`delete from begun`.execute(db));

  const numbers = async () => (await sql<{ n: number }>`select n from begun order by n`.execute(db)).rows.map((row) => row.n);
  const writesOf = async <T>(work: () => Promise<T>): Promise<{ value: T; writes: number }> => {
    const before = proxy.sent();
    const value = await work();
    return { value, writes: proxy.sent() - before };
  };

  it('sends BEGIN with the first statement: two statements and COMMIT are three writes, and commit', async () => {
    const { value, writes } = await writesOf(() =>
      db.transaction().execute(async (tx) => {
        const inserted = await tx
          .insertInto('begun' as never)
          .values({ n: 1, note: 'one' } as never)
          .returning('n' as never)
          .execute();
        const updated = await sql`update begun set note = ${'uno'} where n = ${1}`.execute(tx);
        return { inserted, updated: updated.numAffectedRows };
      }),
    );
    assert.deepEqual(value, { inserted: [{ n: 1 }], updated: 1n }, 'rows and counts answered as without it');
    assert.equal(writes, 3, 'BEGIN with the insert, the update, COMMIT');
    assert.deepEqual(await numbers(), [1]);
  });

  it('answers the number of rows its first statement changed', async () => {
    await sql`insert into begun values (1, 'a'), (2, 'b')`.execute(db);
    const changed = await db.transaction().execute(async (tx) => (await sql`delete from begun where n > ${0}`.execute(tx)).numAffectedRows);
    assert.equal(changed, 2n);
    assert.deepEqual(await numbers(), []);
  });

  it('rolls back what the transaction wrote when it fails after its first statement', async () => {
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await sql`insert into begun values (${5}, 'rolled back')`.execute(tx);
        throw new Error('given up');
      }),
      /given up/,
    );
    assert.deepEqual(await numbers(), []);
  });

  it('a first statement that fails leaves the transaction to be rolled back, and the connection goes on', async () => {
    await sql`insert into begun values (1, 'taken')`.execute(db);
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await sql`insert into begun values (${1}, 'the same key')`.execute(tx);
      }),
      (error: unknown) => (error as { code?: string }).code === '23505',
    );
    await db.transaction().execute(async (tx) => {
      await sql`insert into begun values (${2}, 'after')`.execute(tx);
    });
    assert.deepEqual(await numbers(), [1, 2]);
  });

  it('a transaction that sends no statement sends nothing', async () => {
    const { writes } = await writesOf(() => db.transaction().execute(async () => 'nothing'));
    assert.equal(writes, 0);
    const { writes: rolledBack } = await writesOf(() =>
      assert.rejects(
        db.transaction().execute(async () => {
          throw new Error('before any statement');
        }),
        /before any statement/,
      ),
    );
    assert.equal(rolledBack, 0);
  });

  it('a round trip as the first statement goes with BEGIN, in the transaction', async () => {
    const { value, writes } = await writesOf(() =>
      db.transaction().execute(async (tx) => {
        const rows = await inOneRoundTrip(tx, [
          sql`insert into begun values (${7}, 'seven') returning n`.compile(tx),
          sql`select count(*)::int as count from begun`.compile(tx),
        ]);
        await sql`insert into begun values (${8}, 'eight')`.execute(tx);
        return rows;
      }),
    );
    assert.deepEqual(value, [[{ n: 7 }], [{ count: 1 }]]);
    assert.equal(writes, 3);
    assert.deepEqual(await numbers(), [7, 8]);
  });

  it('a first statement without parameters goes after BEGIN, as the simple protocol takes several statements in one text', async () => {
    await db.transaction().execute(async (tx) => {
      await sql.raw(`insert into begun values (9, 'nine'); insert into begun values (10, 'ten')`).execute(tx);
    });
    assert.deepEqual(await numbers(), [9, 10]);
  });
});
