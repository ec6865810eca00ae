/**
 * Statements in one round trip on PostgreSQL: the rows of each, one transaction (their own, or
 * the one open), and each statement's snapshot taken after the statements before it have run.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { inOneRoundTrip } from '../../src/db/postgres-round-trip.js';
import type { Database } from '../../src/db/tables.js';
import { describeOn, openTestDatabase, POSTGRES } from '../support/database.js';

describeOn(POSTGRES, 'statements in one round trip (PostgreSQL)', () => {
  let test: Awaited<ReturnType<typeof openTestDatabase>>;
  let db: Kysely<Database>;
  before(async () => {
    test = await openTestDatabase(POSTGRES);
    db = test.handle.db;
    await sql`create table round_trip (n int primary key, note text)`.execute(db);
  });
  after(() => test.close());

  const notes = async () => (await sql<{ n: number }>`select n from round_trip order by n`.execute(db)).rows.map((row) => row.n);
  const cleared = () => sql`delete from round_trip`.execute(db);

  it('answers the rows of each statement, in order, with their parameters', async () => {
    const [first, second, third] = await inOneRoundTrip(db, [
      sql`select ${'a'}::text as letter, ${2}::int as number`.compile(db),
      sql`insert into round_trip values (${1}, ${null}) returning n, note`.compile(db),
      sql`select n from round_trip where n = ${1}`.compile(db),
    ]);
    assert.deepEqual(first, [{ letter: 'a', number: 2 }]);
    assert.deepEqual(second, [{ n: 1, note: null }]);
    assert.deepEqual(third, [{ n: 1 }], 'a statement sees what the statements before it wrote');
    assert.deepEqual(await notes(), [1], 'committed at the end of the round trip');
    await cleared();
  });

  it('is one transaction: a statement that fails rolls back those before it, and the connection goes on', async () => {
    await assert.rejects(
      inOneRoundTrip(db, [
        sql`insert into round_trip values (${1}, 'kept?')`.compile(db),
        sql`insert into round_trip values (${1}, 'the same key')`.compile(db),
        sql`insert into round_trip values (${2}, 'skipped')`.compile(db),
      ]),
      (error: unknown) => (error as { code?: string }).code === '23505',
    );
    assert.deepEqual(await notes(), []);
    const [rows] = await inOneRoundTrip(db, [sql`select 1 as one`.compile(db)]);
    assert.deepEqual(rows, [{ one: 1 }]);
  });

  it('joins the transaction open on the connection, and is rolled back with it', async () => {
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await inOneRoundTrip(tx, [sql`insert into round_trip values (${3}, 'in a transaction')`.compile(tx)]);
        assert.deepEqual((await sql<{ n: number }>`select n from round_trip`.execute(tx)).rows, [{ n: 3 }]);
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    assert.deepEqual(await notes(), []);
  });

  it('takes each snapshot after the statements before it: what committed while a lock was awaited is seen', async () => {
    const other = new pg.Client({ connectionString: test.database.url.replace(/\?.*$/, '') });
    await other.connect();
    try {
      const schema = new URL(test.database.url).searchParams.get('schema')!;
      await other.query(`set search_path to "${schema}"`);
      await other.query('begin');
      await other.query('select pg_advisory_xact_lock(42, 42)');
      await other.query(`insert into round_trip values (7, 'committed while waited for')`);
      const waiting = inOneRoundTrip(db, [
        sql`select pg_advisory_xact_lock(42, 42)`.compile(db),
        sql<{ n: number }>`select n from round_trip`.compile(db),
      ]);
      await waitUntilWaitingForLock(other);
      await other.query('commit');
      const [, seen] = await waiting;
      assert.deepEqual(seen, [{ n: 7 }]);
    } finally {
      await other.end();
      await cleared();
    }
  });

  it('refuses a parameter it cannot send as text, sending nothing', async () => {
    await assert.rejects(
      inOneRoundTrip(db, [sql`insert into round_trip values (${4}, ${['a list']})`.compile(db)]),
      /takes strings, numbers and nulls, not object/,
    );
    assert.deepEqual(await notes(), []);
    const [rows] = await inOneRoundTrip(db, [sql`select 1 as one`.compile(db)]);
    assert.deepEqual(rows, [{ one: 1 }], 'and the connection goes on');
  });
});

/** Until some backend waits on an advisory lock (the round trip's, behind `holder`'s). */
async function waitUntilWaitingForLock(holder: pg.Client): Promise<void> {
  for (;;) {
    const { rows } = await holder.query<{ waiting: string }>(
      `select count(*) as waiting from pg_locks where locktype = 'advisory' and not granted and objid = 42`,
    );
    if (Number(rows[0]!.waiting) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
