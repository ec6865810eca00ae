import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { runCli } from '../support/processes.js';

for (const backend of testBackends()) {
  describeOn(backend, `svc-notifications-cmd dbchk and dbsync (${backend.name})`, () => {
    let database: TestDatabase;
    const cli = (...args: string[]) => runCli(['--database-url', database.url, ...args]);
    before(async () => {
      database = await backend.create();
    });
    after(() => database.cleanup());

    it('dbchk says an empty database must be updated, and names dbsync', async () => {
      const result = await cli('dbchk');
      assert.equal(result.code, 255);
      assert.match(result.stderr, /out of date.*dbsync/);
      assert.equal(result.stderr.trim().split('\n').length, 1);
    });

    it('dbsync creates the schema, then finds nothing to do', async () => {
      const first = await cli('dbsync');
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /migrated .*0001-initial/);
      const second = await cli('dbsync');
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /already current/);
    });

    it('dbchk is satisfied after dbsync', async () => {
      const result = await cli('dbchk');
      assert.equal(result.code, 0, result.stderr);
      assert.equal((await cli('dbchk', '--equal')).code, 0);
    });

    it('dbchk --equal refuses a schema newer than the program; plain dbchk accepts it', async () => {
      const handle = openDatabase(database.url);
      try {
        await sql`insert into kysely_migration (name, timestamp) values ('9999-from-the-future', '2030-01-01T00:00:00.000Z')`.execute(
          handle.db,
        );
        assert.equal((await cli('dbchk')).code, 0);
        const equal = await cli('dbchk', '--equal');
        assert.equal(equal.code, 255);
        assert.match(equal.stderr, /newer than this program.*9999-from-the-future/);
      } finally {
        await sql`delete from kysely_migration where name = '9999-from-the-future'`.execute(handle.db);
        await handle.close();
      }
    });
  });

  describeOn(backend, `two dbsync at once (${backend.name})`, () => {
    it('both succeed and the schema is current', async () => {
      const database = await backend.create();
      try {
        const results = await Promise.all([1, 2, 3].map(() => runCli(['--database-url', database.url, 'dbsync'])));
        for (const r of results) assert.equal(r.code, 0, r.stderr);
        assert.equal((await runCli(['--database-url', database.url, 'dbchk'])).code, 0);
      } finally {
        await database.cleanup();
      }
    });
  });
}

describe('svc-notifications-cmd arguments and failures', () => {
  it('bad arguments: exit 2 and a usage line', async () => {
    for (const args of [[], ['frobnicate'], ['dbchk', '--bogus'], ['dbsync', 'extra']]) {
      const result = await runCli(args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, /usage: svc-notifications-cmd/);
    }
  });

  it('an unreachable database: exit 1 and one line, no stack trace', async () => {
    for (const url of ['postgres://postgres@127.0.0.1:1/nowhere', 'sqlite:/nonexistent-directory/for/sure/notifications.sqlite3']) {
      const result = await runCli(['--database-url', url, 'dbchk']);
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.doesNotMatch(result.stderr, /\n\s+at /);
      assert.match(result.stderr, /cannot use the database/);
    }
  });

  it('never prints the database password, even for a URL it cannot open', async () => {
    for (const url of [
      'postgres://notifications:top-secret-pw@127.0.0.1:1/x',
      'postgres://notifications:top-secret-pw@127.0.0.1:1/x?schema=not-a-name',
    ]) {
      const result = await runCli(['--database-url', url, 'dbchk']);
      assert.equal(result.code, 1, result.stderr);
      assert.doesNotMatch(result.stdout + result.stderr, /top-secret-pw/);
    }
  });

  it('--help and --version', async () => {
    const help = await runCli(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /dbchk/);
    assert.match(help.stdout, /dbsync/);
    const version = await runCli(['--version']);
    assert.equal(version.code, 0);
    assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
  });
});
