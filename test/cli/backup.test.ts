/**
 * `svc-notifications-cmd backup FILE`, as a process, against a server process taking events:
 * the copy is a whole database (dbchk) holding every event answered 200 before the backup
 * began. An existing FILE is kept unless --force; PostgreSQL is pg_dump's.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';

/** Posts events one after another (on `lanes` connections at once) until stopped; records those answered 200. */
function eventStream(server: RunningServer, lanes: number) {
  const answered: string[] = [];
  let stopped = false;
  let next = 0;
  const lane = async () => {
    while (!stopped) {
      const id = `backup-${next++}`;
      const response = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id, source: '/backup', type: 't', data: { padding: 'x'.repeat(2_000) } }),
      });
      await response.arrayBuffer();
      assert.equal(response.status, 200, `event ${id}`);
      answered.push(id);
    }
  };
  const running = Promise.all(Array.from({ length: lanes }, lane));
  return {
    answered: () => [...answered],
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

for (const backend of testBackends()) {
  describeOn(backend, `svc-notifications-cmd backup (${backend.name})`, () => {
    let database: TestDatabase;
    let directory: string;
    const cli = (...args: string[]) => runCli(['--database-url', database.url, ...args]);
    before(async () => {
      database = await backend.create();
      directory = mkdtempSync(join(tmpdir(), 'notifications-backup-'));
    });
    after(async () => {
      rmSync(directory, { recursive: true, force: true });
      await database.cleanup();
    });

    if (backend.name === 'postgres') {
      it('refuses, naming pg_dump; writes nothing', async () => {
        assert.equal((await cli('dbsync')).code, 0);
        const file = join(directory, 'copy.sqlite3');
        const result = await cli('backup', file);
        assert.equal(result.code, 2, result.stderr);
        assert.match(result.stderr, /PostgreSQL database: back it up with pg_dump/);
        assert.deepEqual(readdirSync(directory), []);
      });
      return;
    }

    it('a database that does not exist: exit 1, one line saying so; nothing is written', async () => {
      const result = await cli('backup', join(directory, 'copy.sqlite3'));
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.match(result.stderr, /^svc-notifications-cmd backup: the database file \S+ does not exist: there is nothing to back up$/m);
      assert.deepEqual(readdirSync(directory), []);
    });

    it('copies the database while the server takes events: dbchk passes and every event answered before is in the copy', async () => {
      assert.equal((await cli('dbsync')).code, 0);
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url });
      const stream = eventStream(server, 4);
      const file = join(directory, 'copy.sqlite3');
      let before: string[];
      let during: number;
      try {
        await eventually(() => stream.answered().length >= 200, '200 events answered');
        before = stream.answered();
        const result = await cli('backup', file);
        during = stream.answered().length - before.length;
        assert.equal(result.code, 0, result.stderr);
        assert.match(result.stdout, new RegExp(`^backup: copied sqlite:\\S+ to ${file} \\(${statSync(file).size} bytes\\)$`, 'm'));
      } finally {
        await stream.stop();
        assert.equal(await server.stop(), 0);
      }
      assert.ok(during > 0, 'the server answered events while the backup ran');
      assert.deepEqual(readdirSync(directory), ['copy.sqlite3'], 'nothing left beside the copy');

      const check = await runCli(['--database-url', `sqlite:${file}`, 'dbchk']);
      assert.equal(check.code, 0, check.stderr);
      const copy = openDatabase(`sqlite:${file}`, { create: false });
      try {
        const ids = new Set((await copy.db.selectFrom('events').select('event_id').execute()).map((row) => row.event_id));
        const missing = before.filter((id) => !ids.has(id));
        assert.deepEqual(missing, [], `${missing.length} of ${before.length} events answered before the backup are missing`);
        const { rows } = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(copy.db);
        assert.deepEqual(rows, [{ integrity_check: 'ok' }]);
      } finally {
        await copy.close();
      }
    });

    it('keeps an existing file (exit 2) unless --force, which replaces it', async () => {
      const file = join(directory, 'existing.sqlite3');
      writeFileSync(file, 'not to be lost');
      const refused = await cli('backup', file);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, /already exists: it is left as it is \(--force replaces it\)/);
      assert.equal(readFileSync(file, 'utf8'), 'not to be lost');

      const forced = await cli('backup', file, '--force');
      assert.equal(forced.code, 0, forced.stderr);
      assert.equal((await runCli(['--database-url', `sqlite:${file}`, 'dbchk'])).code, 0, 'a database now');
      assert.ok(!readdirSync(directory).some((name) => name.includes('partial')), 'no partial copy left');
    });

    it('a directory that does not exist: exit 1 naming the file; no partial copy anywhere', async () => {
      const file = join(directory, 'missing', 'copy.sqlite3');
      const result = await cli('backup', file);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, new RegExp(`backup: cannot write ${file}: `));
      assert.ok(!readdirSync(directory).some((name) => name.includes('partial')));
    });
  });
}
