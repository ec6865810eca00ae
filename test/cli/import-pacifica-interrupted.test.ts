/**
 * An import stopped halfway, by kill -9 or by Ctrl-C, and run again: it completes, and nothing
 * is there twice.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { createSqliteOriginal, type OriginalDatabaseFixture } from '../support/original-service.js';
import { cleanEnv, CLI_BIN, runCli } from '../support/processes.js';
import { ROOT } from '../support/project.js';

const EVENTS = 30_000;
const SUBSCRIPTION = '5e7f0000-0000-4000-8000-000000000001';
const uuid = (kind: number, n: number) => `5e7f${String(kind).padStart(4, '0')}-0000-4000-8000-${String(n).padStart(12, '0')}`;
const time = (n: number) => new Date(Date.UTC(2022, 0, 1) + n * 1000).toISOString().replace('T', ' ').replace('Z', '000');

async function fill(original: OriginalDatabaseFixture): Promise<void> {
  await original.exec('begin');
  await original.addSubscriptions([
    {
      uuid: SUBSCRIPTION,
      name: 'all',
      jsonpath: '$',
      user: 'alice',
      target_url: 'http://127.0.0.1:9/',
      created: time(0),
      updated: time(0),
    },
  ]);
  for (let n = 1; n <= EVENTS; n++) {
    await original.addEvents([
      { uuid: uuid(1, n), jsondata: `{"specversion": "1.0", "id": "${n}", "source": "/s", "type": "t"}`, created: time(n) },
    ]);
    await original.addMatches([
      { uuid: uuid(2, n), event: uuid(1, n), subscription: SUBSCRIPTION, policy: '200', target: '200', created: time(n) },
    ]);
  }
  await original.exec('commit');
}

for (const target of testBackends()) {
  describeOn(target, `import-pacifica stopped halfway and run again (into ${target.name})`, () => {
    let original: OriginalDatabaseFixture;
    before(async () => {
      original = await createSqliteOriginal();
      await fill(original);
    });
    after(async () => await original?.cleanup());

    for (const signal of ['SIGKILL', 'SIGINT'] as const) {
      it(`${signal}: the second run completes what the first began, with nothing twice`, async () => {
        const here = await openTestDatabase(target);
        try {
          const args = ['--database-url', here.database.url, 'import-pacifica', '--from', original.url];
          const child = spawn(process.execPath, [CLI_BIN, ...args], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
          let stdout = '';
          child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
          const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
          const events = async () =>
            Number((await sql<{ n: number }>`select count(*) as n from events`.execute(here.handle.db)).rows[0]!.n);
          await eventually(async () => (await events()) > 0, 'the first page written');
          child.kill(signal);
          const code = await exited;
          const stoppedAt = await events();
          assert.ok(stoppedAt < EVENTS, `stopped halfway (${stoppedAt} of ${EVENTS} events written)`);
          if (signal === 'SIGINT') {
            assert.equal(code, 130, stdout);
            assert.match(stdout, /^interrupted in .*: run the same command again to finish/m);
          }
          const again = await runCli(args, {});
          assert.equal(again.code, 0, again.stdout + again.stderr);
          const tally = (kind: string) => {
            const m = new RegExp(`^${kind}: (\\d+) new, (\\d+) already present \\(of (\\d+) read\\)$`, 'm').exec(again.stdout);
            assert.ok(m, again.stdout);
            return m.slice(1).map(Number);
          };
          const [newEvents, presentEvents, readEvents] = tally('events');
          assert.equal(readEvents, EVENTS);
          assert.equal(newEvents! + presentEvents!, EVENTS);
          assert.equal(presentEvents, stoppedAt, 'the rows written before the stop are found, not written again');
          const [newMatches, presentMatches] = tally('matches');
          assert.equal(newMatches! + presentMatches!, EVENTS);
          assert.equal(await events(), EVENTS);
          const matches = await sql<{ n: number }>`select count(*) as n from matches`.execute(here.handle.db);
          assert.equal(Number(matches.rows[0]!.n), EVENTS);
        } finally {
          await here.close();
        }
      });
    }
  });
}
