/**
 * Only dbsync creates the database: dbchk, eventget, eventpurge, eventretry and the server,
 * pointed at a SQLite file (or a PostgreSQL schema) that does not exist, say so and leave
 * nothing behind.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { after, before, it } from 'node:test';
import pg from 'pg';
import { describeOn, POSTGRES_TEST_URL, type TestDatabase, testBackends } from '../support/database.js';
import { run, runCli, SERVER_BIN } from '../support/processes.js';

for (const backend of testBackends()) {
  describeOn(backend, `only dbsync creates the database (${backend.name})`, () => {
    let database: TestDatabase;
    const cli = (...args: string[]) => runCli(['--database-url', database.url, ...args]);

    /** SQLite: the files in the test's own directory (the database, -wal, -shm); PostgreSQL: the schema. */
    async function leftBehind(): Promise<string[]> {
      if (backend.name === 'sqlite') return readdirSync(dirname(database.url.slice('sqlite:'.length)));
      const schema = new URL(database.url).searchParams.get('schema');
      const client = new pg.Client({ connectionString: POSTGRES_TEST_URL });
      await client.connect();
      try {
        const { rows } = await client.query<{ nspname: string }>('select nspname from pg_namespace where nspname = $1', [schema]);
        return rows.map((r) => r.nspname);
      } finally {
        await client.end();
      }
    }

    before(async () => {
      database = await backend.create();
    });
    after(() => database.cleanup());

    it('dbchk: exit 255 and one line naming dbsync; nothing is created', async () => {
      const result = await cli('dbchk');
      assert.equal(result.code, 255, result.stderr);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.match(result.stderr, /dbsync/);
      if (backend.name === 'sqlite')
        assert.match(
          result.stderr,
          /^svc-notifications-cmd dbchk: the schema is out of date \(the database file \S+ does not exist\): run `svc-notifications-cmd dbsync` to create it$/m,
        );
      assert.deepEqual(await leftBehind(), []);
    });

    for (const args of [['eventget'], ['eventget', '--json'], ['eventpurge'], ['eventretry', '6f1c1d0e-0d3a-4d7e-9f3e-2a1b0c9d8e7f']]) {
      it(`${args.join(' ')}: exit 1 and one line; nothing is created`, async () => {
        const result = await cli(...args);
        assert.equal(result.code, 1, result.stderr);
        assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
        if (backend.name === 'sqlite')
          assert.match(
            result.stderr,
            new RegExp(
              `^svc-notifications-cmd ${args[0]}: the schema is out of date \\(the database file \\S+ does not exist\\): run \`svc-notifications-cmd dbsync\` to create it$`,
              'm',
            ),
          );
        assert.deepEqual(await leftBehind(), []);
      });
    }

    it('the server refuses to start, names dbsync, and creates nothing', async () => {
      const result = await run(SERVER_BIN, [], { NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_PORT: '0' });
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.match(result.stderr, /svc-notifications-cmd dbsync/);
      if (backend.name === 'sqlite')
        assert.match(
          result.stderr,
          /^svc-notifications: the database schema is out of date \(the database file \S+ does not exist\): run `svc-notifications-cmd dbsync` to create it$/m,
        );
      assert.deepEqual(await leftBehind(), []);
    });

    it('dbsync creates it; then dbchk is satisfied', async () => {
      const sync = await cli('dbsync');
      assert.equal(sync.code, 0, sync.stderr);
      assert.notDeepEqual(await leftBehind(), []);
      const check = await cli('dbchk');
      assert.equal(check.code, 0, check.stderr);
    });
  });
}
