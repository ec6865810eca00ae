/**
 * What `import-pacifica` refuses, and how it says so: one line naming the problem, the right
 * exit status, never a stack trace; and what it reports without refusing.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { describeOn, openTestDatabase, SQLITE } from '../support/database.js';
import { createSqliteOriginal, type OriginalDatabaseFixture, originalSources } from '../support/original-service.js';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cleanEnv, CLI_BIN, freePort, type Finished, runCli, runCommand } from '../support/processes.js';
import { ROOT } from '../support/project.js';

const KINDS = 'postgres://, postgresql://, mysql:// (MySQL or MariaDB) or sqlite:///path';

function assertOneLine(result: Finished, code: number, pattern: RegExp): void {
  assert.equal(result.code, code, result.stdout + result.stderr);
  assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  assert.match(result.stderr, pattern);
}

const subscription = (uuid: string, user: string, created = '2021-05-01 12:00:00') => ({
  uuid,
  name: 'n',
  jsonpath: '$.data',
  user,
  target_url: 'http://127.0.0.1:9/',
  created,
  updated: created,
});

describe('import-pacifica refuses', () => {
  let here: Awaited<ReturnType<typeof openTestDatabase>>;
  const importFrom = (from: string, ...args: string[]) =>
    runCli(['--database-url', here.database.url, 'import-pacifica', '--from', from, ...args]);
  before(async () => (here = await openTestDatabase(SQLITE)));
  after(async () => await here?.close());

  it('a URL of another kind, listing the kinds it reads (exit 2)', async () => {
    for (const from of ['redis://127.0.0.1/0', 'http://127.0.0.1/', 'notes.txt']) {
      assertOneLine(await importFrom(from), 2, new RegExp(`--from: .*read from ${KINDS.replace(/[/()+]/g, '\\$&')}`));
    }
  });

  it('a source that refuses the connection, naming host and port (exit 1)', async () => {
    const port = await freePort();
    assertOneLine(
      await importFrom(`postgres://u:p@127.0.0.1:${port}/notify`),
      1,
      new RegExp(`cannot reach the original's database at 127\\.0\\.0\\.1:${port} \\(PostgreSQL\\)`),
    );
    assertOneLine(
      await importFrom(`mysql://u:p@127.0.0.1:${port}/notify`),
      1,
      new RegExp(`at 127\\.0\\.0\\.1:${port} \\(MySQL/MariaDB\\)`),
    );
  });

  describe('a source that accepts the connection and never answers', () => {
    let silent: Server;
    const sockets = new Set<Socket>();
    let port: number;
    before(async () => {
      silent = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      port = (silent.address() as { port: number }).port;
    });
    after(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });

    for (const scheme of ['postgres', 'mysql']) {
      // The connect time-out (8 s) ends it; importFrom's own limit fails a command that hangs.
      it(`${scheme}: gives up at its connect time-out, naming host and port (exit 1)`, async () => {
        const result = await importFrom(`${scheme}://u:p@127.0.0.1:${port}/notify`);
        assertOneLine(result, 1, new RegExp(`cannot reach the original's database at 127\\.0\\.0\\.1:${port}`));
      });
    }
  });

  it('a database without the original tables, saying what it found (exit 2)', async () => {
    assertOneLine(
      await importFrom(`sqlite:///${here.database.url.slice('sqlite:'.length)}`),
      2,
      /the source holds none of the original's tables \(notificationsystem, eventmatch\); found \d+ other tables: attempts, events/,
    );
  });

  it('a schema version it does not read, naming it (exit 2)', async () => {
    const original = await createSqliteOriginal();
    try {
      await original.exec(`update notificationsystem set value = 1 where part = 'minor'`);
      assertOneLine(
        await importFrom(original.url),
        2,
        /schema version is 3\.1 \(notificationsystem\); this import reads versions 3\.0 and 2\.0/,
      );
    } finally {
      await original.cleanup();
    }
  });

  it('a missing source file, saying how peewee reads the path (exit 1)', async () => {
    assertOneLine(await importFrom('sqlite:///no/such/notify.db'), 1, /no file no\/such\/notify\.db \(sqlite:\/\/\/path is relative/);
  });

  it('a time zone the system does not know, and a --since that is not a date (exit 2, before anything is read)', async () => {
    assertOneLine(
      await importFrom('sqlite:///x.db', '--timezone', 'Europe/Atlantis'),
      2,
      /--timezone: unknown time zone "Europe\/Atlantis"/,
    );
    assertOneLine(await importFrom('sqlite:///x.db', '--since', '2020-01-01'), 2, /--since must be a date 'YYYY-MM-DD HH:MM:SS'/);
    assertOneLine(await importFrom('sqlite:///x.db', 'extra'), 2, /unknown argument extra/);
  });

  it('a target whose schema is not current, naming dbsync (exit 1)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'import-target-'));
    try {
      const result = await runCli(['--database-url', `sqlite:${join(dir, 'none.sqlite3')}`, 'import-pacifica', '--from', 'sqlite:///x.db']);
      assertOneLine(result, 1, /dbsync/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('import-pacifica reports without refusing', () => {
  let here: Awaited<ReturnType<typeof openTestDatabase>>;
  let original: OriginalDatabaseFixture;
  before(async () => {
    here = await openTestDatabase(SQLITE);
  });
  after(async () => {
    await here?.close();
  });

  it('schema 2.0: the subscriptions, and that there is no log', async () => {
    original = await createSqliteOriginal('2.0');
    try {
      await original.addSubscriptions([subscription('11111111-2222-4333-8444-555555555501', 'alice')]);
      const result = await runCli(['--database-url', here.database.url, 'import-pacifica', '--from', original.url]);
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.match(result.stdout, /\(schema 2\.0; its times read in UTC\)/);
      assert.match(result.stdout, /^subscriptions: 1 new/m);
      assert.match(result.stdout, /^event log: none \(schema 2\.0 has no event log\)$/m);
    } finally {
      await original.cleanup();
    }
  });

  it('rows it cannot read, each by uuid with why, the rest imported (exit 1); TZ is the default zone; --since leaves out older events', async () => {
    original = await createSqliteOriginal();
    try {
      const s = '11111111-2222-4333-8444-555555555511';
      await original.addSubscriptions([subscription(s, 'dora'), subscription('11111111-2222-4333-8444-555555555512', 'dora')]);
      const good = (uuid: string, created: string) => ({
        uuid,
        jsondata: `{"specversion": "1.0", "id": "${uuid}", "source": "/s", "type": "t"}`,
        created,
      });
      await original.addEvents([
        good('11111111-2222-4333-8444-5555555555e1', '2021-06-01 10:00:00'),
        good('11111111-2222-4333-8444-5555555555e2', '2021-06-02 10:00:00'),
        { uuid: '11111111-2222-4333-8444-5555555555e3', jsondata: '{"size": NaN}', created: '2021-06-02 11:00:00' },
        { uuid: '11111111-2222-4333-8444-5555555555e4', jsondata: '[1, 2]', created: '2021-06-02 12:00:00' },
      ]);
      // SQLite does not enforce peewee's foreign keys: a match may name a subscription that is gone.
      await original.addMatches([
        {
          uuid: '11111111-2222-4333-8444-5555555555a1',
          event: '11111111-2222-4333-8444-5555555555e2',
          subscription: s,
          policy: '200',
          target: '200',
          created: '2021-06-02 10:00:01',
        },
        {
          uuid: '11111111-2222-4333-8444-5555555555a2',
          event: '11111111-2222-4333-8444-5555555555e2',
          subscription: '11111111-2222-4333-8444-5555555555ff',
          policy: '200',
          target: '200',
          created: '2021-06-02 10:00:02',
        },
        {
          uuid: '11111111-2222-4333-8444-5555555555a3',
          event: '11111111-2222-4333-8444-5555555555e3',
          subscription: s,
          policy: '200',
          target: '200',
          created: '2021-06-02 11:00:01',
        },
      ]);
      const result = await runCli(
        ['--database-url', here.database.url, 'import-pacifica', '--from', original.url, '--since', '2021-06-02 00:00:00'],
        { TZ: 'America/New_York', NOTIFICATIONS_USER_SUBSCRIPTIONS: '1' },
      );
      assert.equal(result.code, 1, result.stdout + result.stderr);
      assert.match(result.stdout, /its times read in America\/New_York/);
      assert.match(result.stdout, /^events: 1 new, 0 already present, 2 unreadable \(of 3 read\)$/m);
      assert.match(result.stdout, /^ {4}11111111-2222-4333-8444-5555555555e3: its jsondata is not JSON$/m);
      assert.match(result.stdout, /^ {4}11111111-2222-4333-8444-5555555555e4: its jsondata is not a JSON object, so not an event$/m);
      assert.match(result.stdout, /^matches: 1 new, 0 already present, 2 unreadable \(of 3 read\)$/m);
      assert.match(
        result.stdout,
        /^ {4}11111111-2222-4333-8444-5555555555a2: its subscription 11111111-2222-4333-8444-5555555555ff did not come over/m,
      );
      assert.match(result.stdout, /^ {4}11111111-2222-4333-8444-5555555555a3: its event could not be read$/m);
      assert.match(result.stdout, /NOTIFICATIONS_USER_SUBSCRIPTIONS \(1\), imported all the same.*\n {4}dora: 2$/m);
      assert.match(result.stdout, /1 new event was received longer ago than NOTIFICATIONS_RETENTION \(30d\)/);
      const got = await runCli(['--database-url', here.database.url, 'eventget', '--json', '11111111-2222-4333-8444-5555555555e2']);
      assert.equal(JSON.parse(got.stdout).received, '2021-06-02T14:00:00.000000', 'read in New York (UTC-4 in June)');
    } finally {
      await original.cleanup();
    }
  });
});

describe('import-pacifica and a log here that differs from the original', () => {
  it('leaves an event and a match that differ as they are, and lists each as a conflict (exit 1)', async () => {
    const here = await openTestDatabase(SQLITE);
    const original = await createSqliteOriginal();
    try {
      const s = '33333333-2222-4333-8444-555555555501';
      const [e1, e2] = ['33333333-2222-4333-8444-5555555555e1', '33333333-2222-4333-8444-5555555555e2'];
      const [m1, m2] = ['33333333-2222-4333-8444-5555555555a1', '33333333-2222-4333-8444-5555555555a2'];
      await original.addSubscriptions([subscription(s, 'fay')]);
      await original.addEvents([
        { uuid: e1, jsondata: '{"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}', created: '2021-06-01 10:00:00' },
        { uuid: e2, jsondata: '{"specversion": "1.0", "id": "2", "source": "/s", "type": "t"}', created: '2021-06-02 10:00:00' },
      ]);
      await original.addMatches([
        { uuid: m1, event: e1, subscription: s, policy: '200', target: '200', created: '2021-06-01 10:00:01' },
        { uuid: m2, event: e2, subscription: s, policy: '200', target: '200', created: '2021-06-02 10:00:01' },
      ]);
      const importFrom = () => runCli(['--database-url', here.database.url, 'import-pacifica', '--from', original.url]);
      assert.equal((await importFrom()).code, 0);
      // The original's rows, as stored there (32 hex digits): another text for e1, another target code for m2.
      await original.exec(
        `update eventlog set jsondata = '{"specversion": "1.0", "id": "1", "source": "/s", "type": "other"}' where uuid = ?`,
        [e1.replaceAll('-', '')],
      );
      await original.exec(`update eventlogmatch set target_status_code = '500' where uuid = ?`, [m2.replaceAll('-', '')]);
      const again = await importFrom();
      assert.equal(again.code, 1, again.stdout + again.stderr);
      assert.match(again.stdout, /^events: 0 new, 1 already present, 1 conflict \(of 2 read\)$/m);
      assert.match(again.stdout, /^matches: 0 new, 0 already present, 2 conflicts \(of 2 read\)$/m);
      assert.match(again.stdout, new RegExp(`^    ${e1}: event: differs in text; left as it is here$`, 'm'));
      assert.match(again.stdout, new RegExp(`^    ${m1}: match: its event is not the original's here; not imported$`, 'm'));
      assert.match(again.stdout, new RegExp(`^    ${m2}: match: differs in target_code, state; left as it is here$`, 'm'));
      const got = JSON.parse(
        (await runCli(['--database-url', here.database.url, 'eventget', '--json', e1, e2])).stdout.split('\n')[0]!,
      ) as {
        event: { type: string };
      };
      assert.equal(got.event.type, 't', 'the event here is left as it was');
    } finally {
      await original.cleanup();
      await here.close();
    }
  });
});

// Every source kind reads its own catalogue for the check: one without the original's tables is refused alike.
for (const source of originalSources().filter((s) => s.kind !== 'sqlite')) {
  describeOn({ skip: source.skip }, `import-pacifica refuses a ${source.kind} database of another version`, () => {
    it('naming the version found (exit 2)', async () => {
      const original = await source.create();
      const here = await openTestDatabase(SQLITE);
      try {
        await original.exec(`update notificationsystem set value = 4 where part = 'major'`);
        const result = await runCli(['--database-url', here.database.url, 'import-pacifica', '--from', original.url]);
        assertOneLine(result, 2, /schema version is 4\.0/);
      } finally {
        await here.close();
        await original.cleanup();
      }
    });
  });
}

/** util-linux's `script` gives a command a terminal of its own, as an operator's shell would. */
const SCRIPT = '/usr/bin/script';

describe('import-pacifica on a terminal', () => {
  it(
    "shows the log's progress, rows done of the total and the rate, then the summary",
    { skip: existsSync(SCRIPT) ? false : `a terminal: ${SCRIPT} (util-linux) is missing` },
    async () => {
      const here = await openTestDatabase(SQLITE);
      const original = await createSqliteOriginal();
      try {
        const s = '22222222-2222-4333-8444-555555555501';
        await original.addSubscriptions([subscription(s, 'erin')]);
        for (const n of [1, 2, 3]) {
          const event = `22222222-2222-4333-8444-5555555555e${n}`;
          await original.addEvents([
            {
              uuid: event,
              jsondata: `{"specversion": "1.0", "id": "${n}", "source": "/s", "type": "t"}`,
              created: `2021-06-0${n} 10:00:00`,
            },
          ]);
          await original.addMatches([
            {
              uuid: `22222222-2222-4333-8444-5555555555a${n}`,
              event,
              subscription: s,
              policy: '200',
              target: '200',
              created: `2021-06-0${n} 10:00:01`,
            },
          ]);
        }
        const command = [process.execPath, CLI_BIN, '--database-url', here.database.url, 'import-pacifica', '--from', original.url]
          .map((arg) => `'${arg}'`)
          .join(' ');
        const result = await runCommand(SCRIPT, ['-qec', command, '/dev/null'], { cwd: ROOT, env: cleanEnv() });
        assert.equal(result.code, 0, result.stdout + result.stderr);
        assert.match(result.stdout, /event log: 6 of 6 rows \(100%\), [\d,]+ rows\/s/);
        assert.match(result.stdout, /events: 3 new, 0 already present \(of 3 read\)/);
      } finally {
        await original.cleanup();
        await here.close();
      }
    },
  );
});
