/**
 * A running server whose database runs out of space, for real: SQLite on a small tmpfs filled
 * through /receive itself, and PostgreSQL answering 53100 disk_full from triggers in the test's
 * own schema (on every row the service writes; the shared server's disk is not to be filled). Meanwhile each refused request is answered 503
 * STORAGE_FULL with Retry-After, never 500; /readyz says the database is full and the gauge is
 * 1; the log says so once, not once per request. Once space returns the server goes on by
 * itself, and every event it answered 200 reaches its target: those answered just before the
 * disk filled (their deliveries not waited for) and those that filled it as well.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import pg from 'pg';
import { createPostgres, describeOn, POSTGRES, POSTGRES_TEST_URL, type TestDatabase } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';
import { mountSmallFilesystem, SMALL_FILESYSTEM } from '../support/small-filesystem.js';

const SOURCE = '/storage-full';
/**
 * The events sent just before the disk fills, and those that fill it: a subscription of their
 * own, to a target that answers at once, held to FILLER_RATE deliveries a second, so that most
 * of them are still waiting in the queue when the disk fills.
 */
const FILLER = `${SOURCE}/filler`;
const FILLER_RATE = 5;
/** Events answered 200 just before the database is made full, without waiting for their deliveries. */
const JUST_BEFORE = 20;
const FULL = 'storage full: writes are refused until one succeeds';
const TAKEN = 'storage: a write succeeded; writes are taken again';
/** Requests sent while full, beyond the first refused: the log must not have a line for each. */
const REFUSED_MORE = 30;

async function subscribe(server: RunningServer, targetUrl: string, source: string, fields: object = {}): Promise<void> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { 'http-remote-user': 'alice', 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'full', jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl, ...fields }),
  });
  assert.equal(response.status, 200, await response.text());
}

/** Sends events of about `bytes` each, from SOURCE or FILLER, and records which of each were answered 200. */
function sender(server: RunningServer, bytes: number) {
  const answered200 = { [SOURCE]: [] as string[], [FILLER]: [] as string[] };
  let next = 0;
  return {
    answered200,
    send: async (source: typeof SOURCE | typeof FILLER = SOURCE): Promise<Response> => {
      const id = `e-${next++}`;
      const response = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id, source, type: 'org.example.full', data: 'x'.repeat(bytes) }),
      });
      if (response.status === 200) answered200[source].push(id);
      return response;
    },
  };
}

async function assertStorageFull(response: Response, what: string): Promise<void> {
  const body = (await response.json()) as { code: string; message: string };
  assert.equal(response.status, 503, `${what}: ${JSON.stringify(body)}`);
  assert.equal(body.code, 'STORAGE_FULL', what);
  assert.match(body.message, /^database: out of space/);
  assert.equal(response.headers.get('retry-after'), '30', what);
}

async function readiness(server: RunningServer): Promise<{ status: number; database: string }> {
  const response = await fetch(`${server.url}/readyz`);
  return { status: response.status, database: ((await response.json()) as { database: string }).database };
}

async function storageFullGauge(server: RunningServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const sample = /^notifications_storage_full (\S+)$/m.exec(text);
  assert.ok(sample, 'notifications_storage_full is exposed');
  return Number(sample[1]);
}

/** Log lines of warning level or above, from `offset` on. */
const warnings = (server: RunningServer, offset = 0) =>
  server
    .logs()
    .slice(offset)
    .split('\n')
    .filter((line) => /"level":(40|50|60)/.test(line));

const delivered = (target: HttpStub) => new Set(target.requests.map((r) => (JSON.parse(r.body) as { id: string }).id));

interface Volume {
  /** The database refuses writes from now on, or once /receive has filled what is left. */
  fill(): Promise<void>;
  /** After the first refusal: every write is refused, however small (the runners' too). */
  fillTheRest(): Promise<void>;
  /** Space again. */
  free(): Promise<void>;
}

/** A target that holds every delivery until released: outcomes to record while the database is full. */
async function gatedTarget(): Promise<{ target: HttpStub; release(): void; answered(): number }> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let answered = 0;
  const target = await startStub(async (_request, response) => {
    await gate;
    response.writeHead(200).end();
    answered++;
  });
  return { target, release, answered: () => answered };
}

/**
 * The scenario on a server already subscribed to SOURCE: events answered 200, then the
 * database full, then space given back.
 */
async function survivesStorageFull(server: RunningServer, volume: Volume, bytes: number, runnerWritesRefused: boolean): Promise<void> {
  const { target, release, answered } = await gatedTarget();
  const fillerTarget = await startStub();
  try {
    await subscribe(server, target.url, SOURCE);
    await subscribe(server, fillerTarget.url, FILLER, { rate_limit: FILLER_RATE });
    await fullAndBack(server, volume, bytes, { target, release, answered, fillerTarget }, runnerWritesRefused);
  } finally {
    release();
    await target.close();
    await fillerTarget.close();
  }
}

interface Targets {
  /** SOURCE's: holds each delivery until released. */
  target: HttpStub;
  release: () => void;
  answered: () => number;
  /** FILLER's: answers at once (its deliveries are started FILLER_RATE a second). */
  fillerTarget: HttpStub;
}

async function fullAndBack(
  server: RunningServer,
  volume: Volume,
  bytes: number,
  { target, release, answered, fillerTarget }: Targets,
  runnerWritesRefused: boolean,
): Promise<void> {
  const { answered200, send } = sender(server, bytes);
  const BEFORE = 10;
  for (let i = 0; i < BEFORE; i++) assert.equal((await send()).status, 200);
  await eventually(() => target.requests.length === BEFORE, 'the deliveries reach the target, which holds them');
  assert.deepEqual(await readiness(server), { status: 200, database: 'ok' });
  assert.equal(await storageFullGauge(server), 0);
  const logOffset = server.logs().length;

  // Answered 200 just before the database is full, their deliveries not waited for.
  for (let i = 0; i < JUST_BEFORE; i++) assert.equal((await send(FILLER)).status, 200);
  await volume.fill();
  let refusal: Response | undefined;
  for (let i = 0; i < 5_000 && refusal === undefined; i++) {
    const response = await send(FILLER);
    if (response.status !== 200) refusal = response;
  }
  assert.ok(refusal, 'the database refused a write');
  // What follows is about events stored whose deliveries had not been made when the disk filled.
  const atTheFill = fillerTarget.requests.length;
  assert.ok(
    atTheFill < answered200[FILLER].length,
    `of ${answered200[FILLER].length} events answered 200 before the first refusal, ${atTheFill} were delivered already`,
  );
  await assertStorageFull(refusal, 'the first refused /receive');
  await volume.fillTheRest();
  // The deliveries held are answered now: recording their outcomes is refused too.
  release();
  await eventually(() => answered() >= BEFORE && answered() === target.requests.length, 'the target answers the deliveries it held');
  for (let i = 0; i < REFUSED_MORE; i++) await assertStorageFull(await send(), `refused /receive ${i}`);
  assert.deepEqual(await readiness(server), { status: 503, database: 'full' });
  assert.equal(await storageFullGauge(server), 1);

  const said = warnings(server, logOffset);

  assert.equal(said.filter((line) => line.includes(FULL)).length, 1, said.join('\n'));
  assert.ok(said.length <= 3, `${REFUSED_MORE + 1} refused requests, ${said.length} warnings:\n${said.join('\n')}`);
  // Every write refused since (PostgreSQL's triggers refuse them all): none said to be taken.
  if (runnerWritesRefused) assert.ok(!said.some((line) => line.includes(TAKEN)), said.join('\n'));

  await volume.free();
  // No request needed: the server finds the space by itself.
  await eventually(async () => (await readiness(server)).status === 200, '/readyz ready again', 15_000);
  assert.deepEqual(await readiness(server), { status: 200, database: 'ok' });
  assert.equal(await storageFullGauge(server), 0);
  for (let i = 0; i < 5; i++) assert.equal((await send()).status, 200);
  await eventually(
    () => answered200[SOURCE].every((id) => delivered(target).has(id)),
    `every event answered 200 (${answered200[SOURCE].length}) is delivered`,
    20_000,
  );
  // Those answered 200 just before the database was full, and those that filled it: stored, each reaches its target.
  const fillers = answered200[FILLER];
  assert.ok(fillers.length >= JUST_BEFORE, `${fillers.length} answered 200 before the first refusal`);
  const missing = () => fillers.filter((id) => !delivered(fillerTarget).has(id));
  await eventually(
    () => missing().length === 0,
    `every event answered 200 before the database was full (${fillers.length}) is delivered`,
    // They are started FILLER_RATE a second.
    15_000 + (fillers.length * 1000) / FILLER_RATE,
  ).catch((error: Error) => assert.fail(`${error.message}; not delivered: ${missing().join(' ')}`));
  // The delivery runner met refusals too (its outcomes were kept), and delivered nothing twice.
  // On SQLite a small write may still fit after the disk is full (the log file keeps the space
  // a refused transaction had taken): a settlement can end the episode early, so the refusals
  // the log counts are certain only on PostgreSQL.
  const storageLines = warnings(server, logOffset)
    .map((line) => JSON.parse(line) as { msg: string; refused: number })
    .filter((line) => line.msg.startsWith(FULL) || line.msg === TAKEN);
  assert.ok(storageLines[0]?.msg.startsWith(FULL), `said full first: ${JSON.stringify(storageLines)}`);
  const recovered = storageLines.find((line) => line.msg === TAKEN);
  assert.ok(recovered, 'the log says when writes succeed again');
  const { refused } = recovered;
  if (runnerWritesRefused) assert.ok(refused > 1 + REFUSED_MORE, `writes refused: ${refused}, of which requests: ${1 + REFUSED_MORE}`);
  assert.equal(target.requests.length, delivered(target).size, 'no event delivered twice');
  assert.equal(fillerTarget.requests.length, delivered(fillerTarget).size, 'no event delivered twice (before the database was full)');
  assert.doesNotMatch(server.logs(), /"statusCode":500|cannot rollback|unexpected error/);
}

describeOn(SMALL_FILESYSTEM, 'a server whose SQLite disk fills up', () => {
  it('answers 503 STORAGE_FULL, says full on /readyz and /metrics, logs it once, and goes on when space returns', async () => {
    const volume = mountSmallFilesystem(8 * 1024 * 1024);
    try {
      const url = `sqlite:${join(volume.dir, 'notifications.sqlite3')}`;
      assert.equal((await runCli(['--database-url', url, 'dbsync'])).code, 0);
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: url });
      try {
        await survivesStorageFull(
          server,
          {
            // What is left is filled by the events themselves, then the last bytes by a second file.
            fill: async () => volume.fillLeaving(1024 * 1024),
            fillTheRest: async () => volume.fillLeaving(0, 'rest'),
            free: async () => volume.free(),
          },
          8 * 1024,
          false,
        );
        assert.equal(server.process.exitCode, null);
      } finally {
        assert.equal(await server.stop(), 0);
      }
    } finally {
      volume.unmount();
    }
  });
});

describeOn(POSTGRES, 'a server whose PostgreSQL answers 53100 disk_full', () => {
  it('answers 503 STORAGE_FULL, says full on /readyz and /metrics, logs it once, and goes on when space returns', async () => {
    const database: TestDatabase = await createPostgres(POSTGRES_TEST_URL!);
    const schema = new URL(database.url).searchParams.get('schema')!;
    const admin = new pg.Client({ connectionString: POSTGRES_TEST_URL });
    await admin.connect();
    try {
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      await admin.query(`create function "${schema}".disk_full() returns trigger language plpgsql as $$
        begin raise exception 'could not extend file: No space left on device' using errcode = '53100'; end $$`);
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url });
      try {
        // Every table the service writes while it runs: a full disk refuses them all.
        const tables = ['events', 'matches', 'attempts', 'subscriptions'];
        await survivesStorageFull(
          server,
          {
            fill: async () => {
              for (const table of tables) {
                await admin.query(
                  `create trigger disk_full before insert or update or delete on "${schema}".${table} for each row execute function "${schema}".disk_full()`,
                );
              }
            },
            fillTheRest: async () => undefined,
            free: async () => {
              for (const table of tables) await admin.query(`drop trigger disk_full on "${schema}".${table}`);
            },
          },
          100,
          true,
        );
        assert.equal(server.process.exitCode, null);
      } finally {
        assert.equal(await server.stop(), 0);
      }
    } finally {
      await admin.end();
      await database.cleanup();
    }
  });
});
