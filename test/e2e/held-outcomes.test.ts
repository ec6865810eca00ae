/**
 * No repeat after a storage fault: a running server whose deliveries' outcomes cannot be written
 * (the database out of space) holds them for longer than their leases, and once space returns
 * writes them, without having sent any event again meanwhile. The fault lets a claim through
 * while it refuses the settlements, as a full disk does: SQLite on a small tmpfs filled to its
 * last kilobytes (a claim, a page or two, still fits; a settlement does not), PostgreSQL
 * refusing inserts of attempts with 53100 disk_full from a trigger in the test's own schema (a
 * settlement records its attempts; a claim only updates its rows).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import pg from 'pg';
import { createPostgres, describeOn, makeSqliteFileWithPages, POSTGRES, POSTGRES_TEST_URL } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';
import { mountSmallFilesystem, SMALL_FILESYSTEM } from '../support/small-filesystem.js';

const EVENTS = 10;
const SOURCE = '/held-outcomes';
/** Short, so that the fault lasts well past it; the target time-out must be shorter. */
const LEASE_MS = 6_000;
const SETTINGS = { NOTIFICATIONS_LEASE: `${LEASE_MS}ms`, NOTIFICATIONS_TARGET_TIMEOUT: '5s' };
/** The runners look at the queue every second: past this, a row whose lease ran out would have been claimed again. */
const CLAIM_ROUNDS_MS = 3_000;

/** A database refusing the service's settlements for lack of space, and then not. */
interface Fault {
  begin(): Promise<void>;
  end(): Promise<void>;
}

/** What a scene needs of a database set up for it: its URL, the fault, and the clean-up. */
interface FaultyDatabase {
  url: string;
  fault: Fault;
  close(): Promise<void>;
}

async function sqliteOnSmallDisk(): Promise<FaultyDatabase> {
  const volume = mountSmallFilesystem(8 * 1024 * 1024);
  const path = join(volume.dir, 'notifications.sqlite3');
  // With 4 KiB pages a claim's page or two fit in the 8 KB left and a settlement's pages do not;
  // with 1 KiB pages they differ by less than the room left in the log's last tmpfs page.
  makeSqliteFileWithPages(path, 4096);
  return {
    url: `sqlite:${path}`,
    fault: { begin: async () => volume.fillLeaving(8 * 1024), end: async () => volume.free() },
    close: async () => volume.unmount(),
  };
}

async function postgresRefusingAttempts(): Promise<FaultyDatabase> {
  const database = await createPostgres(POSTGRES_TEST_URL!);
  const schema = new URL(database.url).searchParams.get('schema')!;
  const admin = new pg.Client({ connectionString: POSTGRES_TEST_URL });
  await admin.connect();
  return {
    url: database.url,
    fault: {
      begin: async () => {
        await admin.query(`create function "${schema}".disk_full() returns trigger language plpgsql as $$
          begin raise exception 'could not extend file: No space left on device' using errcode = '53100'; end $$`);
        await admin.query(
          `create trigger disk_full before insert on "${schema}".attempts for each row execute function "${schema}".disk_full()`,
        );
      },
      end: async () => {
        await admin.query(`drop trigger disk_full on "${schema}".attempts`);
      },
    },
    close: async () => {
      await admin.end();
      await database.cleanup();
    },
  };
}

async function heldOutcomes(server: RunningServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const sample = /^notifications_outcomes_held (\S+)$/m.exec(text);
  assert.ok(sample, 'notifications_outcomes_held is exposed');
  return Number(sample[1]);
}

interface Delivery {
  event: { id: string };
  state: string;
  attempts: Array<{ stage: string; status: number | null }>;
}

async function deliveries(server: RunningServer, subscription: string): Promise<Delivery[]> {
  const response = await fetch(`${server.url}/eventmatch/${subscription}/deliveries?limit=200`, {
    headers: { 'http-remote-user': 'alice' },
  });
  assert.equal(response.status, 200);
  return (await response.json()) as Delivery[];
}

/** Fails as soon as `check` does not hold, and resolves once it has held until `until` (ms since the epoch). */
async function holdsUntil(check: () => void, until: number): Promise<void> {
  while (Date.now() < until) {
    check();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  check();
}

/**
 * `others`: servers beside the one that receives the events and delivers them, on the same
 * database (PostgreSQL), claiming what is due as it does and able to write.
 */
async function noRepeatAfterTheFault(database: FaultyDatabase, others = 0): Promise<void> {
  const sent = new Map<string, number>();
  let lastArrival = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  // Each event counted as it arrives; answered 200 once the fault is on.
  const onceEach = () => assert.deepEqual([...sent.values()], Array<number>(EVENTS).fill(1), 'each event reached the target once');
  const target = await startStub(async (request, response) => {
    const { id } = JSON.parse(request.body) as { id: string };
    sent.set(id, (sent.get(id) ?? 0) + 1);
    lastArrival = Date.now();
    await gate;
    response.writeHead(200).end();
  });
  try {
    assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
    const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, ...SETTINGS });
    const beside: RunningServer[] = [];
    try {
      for (let i = 0; i < others; i++) beside.push(await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, ...SETTINGS }));
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { 'http-remote-user': 'alice', 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'held', jsonpath: `$[?$.source == '${SOURCE}']`, target_url: target.url }),
      });
      const answer = await created.text();
      assert.equal(created.status, 200, answer);
      const { uuid: subscription } = JSON.parse(answer) as { uuid: string };
      const ids = Array.from({ length: EVENTS }, (_, i) => `held-${i}`);
      const received = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: JSON.stringify(ids.map((id) => ({ specversion: '1.0', id, source: SOURCE, type: 'org.example.held' }))),
      });
      assert.equal(received.status, 200, await received.text());
      await eventually(() => sent.size === EVENTS, 'every event reaches the target, which holds it');

      await database.fault.begin();
      release();
      await eventually(async () => (await heldOutcomes(server)) === EVENTS, 'the outcomes are held: the database refused them');
      // Every lease was taken before its event reached the target: all have run out by then.
      await holdsUntil(onceEach, lastArrival + LEASE_MS + CLAIM_ROUNDS_MS);
      assert.equal(await heldOutcomes(server), EVENTS, 'still held: the database still refuses them');

      await database.fault.end();
      await eventually(
        async () => (await heldOutcomes(server)) === 0,
        'the held outcomes are written once the database takes them',
        20_000,
      );
      const history = await deliveries(server, subscription);
      assert.deepEqual(
        history.map((d) => [d.event.id, d.state, d.attempts.map((a) => [a.stage, a.status])]).sort(),
        ids.map((id) => [id, 'delivered', [['deliver', 200]]]).sort(),
        'each delivered, in one attempt',
      );
      onceEach();
      for (const each of [server, ...beside]) assert.doesNotMatch(each.logs(), /"statusCode":500|unexpected error/);
    } finally {
      for (const other of beside) assert.equal(await other.stop(), 0);
      assert.equal(await server.stop(), 0);
    }
    // Nor on its way out.
    onceEach();
  } finally {
    release();
    await target.close();
  }
}

describeOn(SMALL_FILESYSTEM, 'a server whose SQLite disk is full for longer than its leases', () => {
  it('sends no event again, and writes the outcomes it held once space returns', async () => {
    const database = await sqliteOnSmallDisk();
    try {
      await noRepeatAfterTheFault(database);
    } finally {
      await database.close();
    }
  });
});

describeOn(POSTGRES, 'a server whose PostgreSQL refuses settlements with 53100 disk_full for longer than its leases', () => {
  it('sends no event again, and writes the outcomes it held once the database takes them', async () => {
    const database = await postgresRefusingAttempts();
    try {
      await noRepeatAfterTheFault(database);
    } finally {
      await database.close();
    }
  });

  it('nor does another server on the same database: the leases of the rows held are kept', async () => {
    const database = await postgresRefusingAttempts();
    try {
      await noRepeatAfterTheFault(database, 1);
    } finally {
      await database.close();
    }
  });
});
