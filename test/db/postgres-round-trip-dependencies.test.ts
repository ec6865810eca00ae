/**
 * What src/db/postgres-round-trip.ts relies on in pg and Kysely, which neither documents: pg's
 * Query submitted by way of `requiresPreparation` and `prepare(connection)`, and Kysely's
 * PostgreSQL driver beginning, committing and rolling back a transaction with the bare words
 * `begin`, `commit` and `rollback`. Both are pinned to exact versions in package.json; an upgrade
 * fails here first, saying what to check, instead of as a count of writes gone wrong elsewhere.
 * Needs no database: Kysely's driver talks to a pool that records what it is sent.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Kysely, PostgresDialect, type PostgresPool, sql } from 'kysely';
import pg from 'pg';

/** The versions postgres-round-trip.ts was last checked against. */
const CHECKED = { kysely: '0.29.9', pg: '8.23.1' } as const;

const UPGRADE =
  'src/db/postgres-round-trip.ts drives pg internals and Kysely transaction words; after an upgrade, ' +
  "read both projects' changes for Query.prepare/requiresPreparation and PostgresDriver.beginTransaction, " +
  'run test/db/postgres-begin.test.ts and postgres-round-trip.test.ts on PostgreSQL, then update CHECKED here';

function versionOf(name: string): string {
  return (JSON.parse(readFileSync(`node_modules/${name}/package.json`, 'utf8')) as { version: string }).version;
}

describe('what the PostgreSQL round trip relies on in pg and Kysely', () => {
  it('pins pg and Kysely to the exact versions it was checked against', () => {
    const declared = (JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> }).dependencies;
    for (const name of ['kysely', 'pg'] as const) {
      assert.equal(declared[name], CHECKED[name], `package.json must pin ${name} to exactly ${CHECKED[name]}: ${UPGRADE}`);
      assert.equal(versionOf(name), CHECKED[name], `${name} ${versionOf(name)} is installed, not ${CHECKED[name]}: ${UPGRADE}`);
    }
  });

  it("submits a Query by way of the hooks it overrides (pg's requiresPreparation and prepare)", () => {
    for (const hook of ['requiresPreparation', 'prepare', 'submit'] as const) {
      assert.equal(
        typeof (pg.Query.prototype as unknown as Record<string, unknown>)[hook],
        'function',
        `pg.Query has no ${hook}: ${UPGRADE}`,
      );
    }
    const submit = String((pg.Query.prototype as unknown as { submit: () => void }).submit);
    assert.match(submit, /requiresPreparation\(\)/, `pg.Query.submit no longer asks requiresPreparation(): ${UPGRADE}`);
    assert.match(submit, /prepare\(connection\)/, `pg.Query.submit no longer calls prepare(connection): ${UPGRADE}`);
  });

  it("begins, commits and rolls back with Kysely's bare words", async () => {
    const sent: string[] = [];
    const client = {
      query: (text: string) => {
        sent.push(text);
        return Promise.resolve({ command: text.split(' ')[0]!.toUpperCase(), rowCount: 0, rows: [] });
      },
      release: () => {},
    };
    const pool = { connect: () => Promise.resolve(client), end: () => Promise.resolve(), options: {} } as unknown as PostgresPool;
    const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) });
    try {
      await db.transaction().execute((tx) => sql`select 1`.execute(tx));
      await assert.rejects(
        db.transaction().execute(async (tx) => {
          await sql`select 2`.execute(tx);
          throw new Error('given up');
        }),
        /given up/,
      );
      assert.deepEqual(sent, ['begin', 'select 1', 'commit', 'begin', 'select 2', 'rollback'], UPGRADE);
    } finally {
      await db.destroy();
    }
  });
});
