/**
 * Outcomes the database refuses to record (a full disk) are held, and their rows are not taken
 * again while they are: the delivery and policy runners over a real database that refuses the
 * settlements while a claim, a smaller write, still fits, with the clock in the test's hand past
 * the rows' leases. SQLite on a real tmpfs filled to its last few kilobytes (a claim fits there,
 * a settlement does not); PostgreSQL refusing inserts of attempts with 53100 disk_full from a
 * trigger in the test's own schema (a settlement records one; a claim does not). Meanwhile the
 * rows' leases are extended in the database past their original end, and (PostgreSQL) another
 * instance's claims do not take them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { it, type TestContext } from 'node:test';
import pg from 'pg';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { logEvent, pendingMatch } from '../../src/db/stores/events.js';
import { matchQueue } from '../../src/db/stores/match-queue.js';
import { claimDueMatches } from '../../src/db/stores/matches.js';
import { syncSchema } from '../../src/db/migrate.js';
import { isStorageFull } from '../../src/db/storage-full.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchesTable, MatchState } from '../../src/db/tables.js';
import { createTargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { createPolicyClient } from '../../src/policy/policy-client.js';
import { Settler } from '../../src/runners/settler.js';
import { createPostgres, describeOn, makeSqliteFileWithPages, POSTGRES, POSTGRES_TEST_URL } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { TEST_LEASE_US, testDeliveryRunner, testPolicyRunner } from '../support/runners.js';
import { mountSmallFilesystem, SMALL_FILESYSTEM } from '../support/small-filesystem.js';
import { subscriptionRow } from '../support/subscription-row.js';

const NOW = 1_800_000_000_000_000;
/** Past the lease of a row claimed at NOW. */
const LEASE_OVER = NOW + TEST_LEASE_US + 1_000_000;
/** A lease short enough to run out during a test, long enough for a delivery (its time-out is 2 s) to start under it. */
const SHORT_LEASE_US = 4_000_000;

/** A clock that goes at the pace of real time from NOW: the settler looks at leases on real timers. */
function runningClock(): () => number {
  const started = performance.now();
  return () => NOW + Math.round((performance.now() - started) * 1000);
}

/** A database whose settlements can be refused for lack of space, while claims go on. */
interface Faulty {
  handle: DatabaseHandle;
  /** Where another instance would connect. */
  url: string;
  /** From now on settlements are refused with the database's own disk-full error. */
  refuse(): Promise<void>;
  /** Space again. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

async function sqliteOnSmallDisk(): Promise<Faulty> {
  const volume = mountSmallFilesystem(4 * 1024 * 1024);
  const path = join(volume.dir, 'notifications.sqlite3');
  // With 4 KiB pages a claim's page or two fit in the 8 KB left and a settlement's pages do not;
  // with 1 KiB pages they differ by less than the room left in the log's last tmpfs page.
  makeSqliteFileWithPages(path, 4096);
  const url = `sqlite:${path}`;
  const handle = openDatabase(url);
  await syncSchema(handle);
  return {
    handle,
    url,
    // A claim of a few rows still fits in 8 KB; a settlement (its attempts, their indexes) does not.
    refuse: async () => volume.fillLeaving(8 * 1024),
    restore: async () => volume.free(),
    close: async () => {
      await handle.close();
      volume.unmount();
    },
  };
}

async function postgresRefusingAttempts(): Promise<Faulty> {
  const database = await createPostgres(POSTGRES_TEST_URL!);
  const handle = openDatabase(database.url);
  await syncSchema(handle);
  const schema = handle.schema!;
  const admin = new pg.Client({ connectionString: POSTGRES_TEST_URL });
  await admin.connect();
  await admin.query(`create function "${schema}".disk_full() returns trigger language plpgsql as $$
    begin raise exception 'could not extend file: No space left on device' using errcode = '53100'; end $$`);
  return {
    handle,
    url: database.url,
    refuse: async () => {
      await admin.query(
        `create trigger disk_full before insert on "${schema}".attempts for each row execute function "${schema}".disk_full()`,
      );
    },
    restore: async () => {
      await admin.query(`drop trigger disk_full on "${schema}".attempts`);
    },
    close: async () => {
      await admin.end();
      await handle.close();
      await database.cleanup();
    },
  };
}

interface Scene {
  faulty: Faulty;
  now: number;
  clock: () => number;
  /** The settler of the runner under test: what it holds, and each refusal it met. */
  settler: Settler;
  refusals: unknown[];
  /** A row of a new event for a new subscription of `owner` to `targetUrl`, in `state`, due before NOW. */
  queue(targetUrl: string, state: MatchState, owner?: string): Promise<MatchesTable>;
  read(uuid: string): Promise<MatchesTable>;
  attempts(uuid: string): Promise<Array<{ stage: string; status: number | null }>>;
  /** A real HTTP server that holds each request until `release`, then answers `status`. */
  holdingStub(status: number): Promise<{ stub: HttpStub; release(): void }>;
}

async function scene(t: TestContext, open: () => Promise<Faulty>): Promise<Scene> {
  const faulty = await open();
  const stubs: HttpStub[] = [];
  const releases: Array<() => void> = [];
  const refusals: unknown[] = [];
  let events = 0;
  const s: Scene = {
    faulty,
    now: NOW,
    clock: () => s.now,
    settler: new Settler(
      matchQueue(faulty.handle),
      'me',
      TEST_LEASE_US,
      () => s.now,
      (error) => refusals.push(error),
    ),
    refusals,
    queue: async (targetUrl, state, owner = 'alice') => {
      const subscription = subscriptionRow({ target_url: targetUrl, owner });
      await insertSubscription(faulty.handle.db, faulty.handle.capabilities, subscription);
      const eventUuid = randomUUID();
      const id = `e${++events}`;
      const match = { ...pendingMatch(eventUuid, subscription, NOW - 1_000_000 + events), state };
      const body = JSON.stringify({ specversion: '1.0', id, source: '/held', type: 't' });
      await logEvent(
        faulty.handle.db,
        { uuid: eventUuid, source: '/held', event_id: id, type: 't', spec_version: '1.0', body, received: 1 },
        [match],
      );
      return match;
    },
    read: (uuid) => faulty.handle.db.selectFrom('matches').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow(),
    attempts: (uuid) => faulty.handle.db.selectFrom('attempts').select(['stage', 'status']).where('match_uuid', '=', uuid).execute(),
    holdingStub: async (status) => {
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      releases.push(release);
      const stub = await startStub(async (_request, response) => {
        await held;
        response.writeHead(status).end();
      });
      stubs.push(stub);
      return { stub, release };
    },
  };
  t.after(async () => {
    for (const release of releases) release();
    for (const stub of stubs) await stub.close();
    s.settler.close();
    await faulty.close();
  });
  return s;
}

/**
 * The scene's runner (taking `stage` rows) has sent the one row queued to `stub`, whose answer
 * the database refused to record: once that is held, the test's clock is moved past its lease
 * (as extended when the outcome was held, at the same moment by that clock: as if the database
 * had refused the extensions after it too).
 */
/** A target client for a test's deliveries, closed after it. */
function testTarget(t: TestContext) {
  const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
  t.after(() => target.close());
  return target;
}

/** The scene's delivery runner, on its faulty database and its settler. */
function deliveryRunnerOf(t: TestContext, s: Scene) {
  return testDeliveryRunner({ handle: s.faulty.handle, clock: s.clock, settler: s.settler }, { target: testTarget(t) });
}

async function heldPastTheLease(s: Scene, runner: { intake(): Promise<number> }, stub: HttpStub, release: () => void): Promise<void> {
  assert.equal(await runner.intake(), 1);
  await eventually(() => stub.requests.length === 1, 'the attempt reaches its destination, which holds it');
  await s.faulty.refuse();
  release();
  await eventually(() => s.settler.holding, 'its outcome is held: the database refused it');
  assert.ok(s.refusals.every(isStorageFull), String(s.refusals[0]));
  assert.equal(s.settler.heldRows, 1);
  s.now = LEASE_OVER;
}

const runners = [
  { name: 'SQLite on a full disk', on: SMALL_FILESYSTEM, open: sqliteOnSmallDisk },
  { name: 'PostgreSQL answering 53100 disk_full', on: POSTGRES, open: postgresRefusingAttempts },
];

for (const { name, on, open } of runners) {
  describeOn(on, `held outcomes (${name})`, () => {
    it('a delivery whose outcome is held is not claimed again once its lease runs out, and its outcome is written before any claim', async (t) => {
      const s = await scene(t, open);
      const { stub, release } = await s.holdingStub(200);
      const row = await s.queue(stub.url, 'deliver');
      const runner = deliveryRunnerOf(t, s);
      await heldPastTheLease(s, runner, stub, release);

      assert.equal(await runner.intake(), 0, 'nothing claimed while its outcome is held');
      const waiting = await s.read(row.uuid);
      assert.deepEqual(
        [waiting.state, waiting.locked_by, waiting.locked_until, waiting.attempts],
        ['deliver', 'me', NOW + TEST_LEASE_US, 0],
        'its lease ran out in the database, and no claim took it',
      );
      // Space again: a round made before the settler's next try still claims nothing.
      await s.faulty.restore();
      assert.equal(await runner.intake(), 0, 'the held outcome goes first');
      s.settler.retryNow();
      await runner.idle();
      assert.equal(s.settler.holding, false);
      const settled = await s.read(row.uuid);
      assert.deepEqual([settled.state, settled.target_code, settled.attempts, settled.locked_by], ['delivered', 200, 1, null]);
      assert.deepEqual(await s.attempts(row.uuid), [{ stage: 'deliver', status: 200 }]);
      assert.equal(await runner.intake(), 0);
      assert.equal(stub.requests.length, 1, 'the target had it once');
    });

    it("a policy answer that is held is not asked again once its rows' leases run out", async (t) => {
      const s = await scene(t, open);
      // The policy service says "later": an attempt to record with the row due again.
      const { stub, release } = await s.holdingStub(503);
      const row = await s.queue('http://127.0.0.1:9/', 'policy');
      const policy = createPolicyClient({ baseUrl: stub.url, timeoutMs: 2_000 });
      t.after(() => policy.close());
      const runner = testPolicyRunner({ handle: s.faulty.handle, clock: s.clock, settler: s.settler }, { policy });
      await heldPastTheLease(s, runner, stub, release);

      assert.equal(await runner.intake(), 0, 'nothing claimed while its outcome is held');
      assert.deepEqual([(await s.read(row.uuid)).locked_by, (await s.read(row.uuid)).locked_until], ['me', NOW + TEST_LEASE_US]);
      await s.faulty.restore();
      assert.equal(await runner.intake(), 0, 'the held outcome goes first');
      s.settler.retryNow();
      await runner.idle();
      const settled = await s.read(row.uuid);
      assert.deepEqual([settled.state, settled.attempts, settled.locked_by], ['policy', 1, null], 'due again later, as the answer said');
      assert.deepEqual(await s.attempts(row.uuid), [{ stage: 'policy', status: 503 }]);
      assert.equal(stub.requests.length, 1, 'the policy service was asked once');
    });

    it('the lease of a row whose outcome is held is extended in the database past its original end', async (t) => {
      const s = await scene(t, open);
      const { stub, release } = await s.holdingStub(200);
      const row = await s.queue(stub.url, 'deliver');
      const runner = deliveryRunnerOf(t, s);
      assert.equal(await runner.intake(), 1);
      await eventually(() => stub.requests.length === 1, 'the attempt reaches its destination, which holds it');
      // The target took half the lease to answer; its answer is refused.
      s.now = NOW + TEST_LEASE_US / 2;
      await s.faulty.refuse();
      release();
      await eventually(() => s.settler.holding, 'its outcome is held: the database refused it');
      await eventually(
        async () => (await s.read(row.uuid)).locked_until === s.now + TEST_LEASE_US,
        'its lease runs a whole lease from the refusal on, past the end of the one it was claimed with',
      );

      s.now = LEASE_OVER;
      const other = { holder: 'another instance', now: s.now, durationUs: TEST_LEASE_US };
      assert.deepEqual(
        await claimDueMatches(s.faulty.handle.db, s.faulty.handle.capabilities, 'deliver', other, 10),
        [],
        'a claim past the end of the original lease takes nothing',
      );
      assert.equal((await s.read(row.uuid)).locked_by, 'me');
      await s.faulty.restore();
      s.settler.retryNow();
      await runner.idle();
      const settled = await s.read(row.uuid);
      assert.deepEqual([settled.state, settled.attempts, settled.locked_by], ['delivered', 1, null]);
      assert.deepEqual(await s.attempts(row.uuid), [{ stage: 'deliver', status: 200 }]);
      assert.equal(stub.requests.length, 1, 'the target had it once');
    });
  });
}

describeOn(POSTGRES, 'held outcomes across two instances on one PostgreSQL database', () => {
  it("another instance's claims do not take a row whose outcome is held past its original lease, and the target has it once", async (t) => {
    const s = await scene(t, postgresRefusingAttempts);
    const clock = runningClock();
    const { stub, release } = await s.holdingStub(200);
    const row = await s.queue(stub.url, 'deliver');
    const target = testTarget(t);
    const settler = new Settler(matchQueue(s.faulty.handle), 'me', SHORT_LEASE_US, clock, () => undefined);
    t.after(() => settler.close());
    const mine = testDeliveryRunner({ handle: s.faulty.handle, clock, leaseUs: SHORT_LEASE_US, settler }, { target });
    // The other instance: its own connections, its own holder, and a database that takes its writes as much as ours.
    const otherHandle = openDatabase(s.faulty.url);
    t.after(() => otherHandle.close());
    const others = testDeliveryRunner({ handle: otherHandle, clock, holder: 'other', leaseUs: SHORT_LEASE_US }, { target });

    assert.equal(await mine.intake(), 1);
    await eventually(() => stub.requests.length === 1, 'the attempt reaches the target, which holds it');
    const originalEnd = (await s.read(row.uuid)).locked_until!;
    await s.faulty.refuse();
    release();
    await eventually(() => settler.holding, 'its outcome is held: the database refused it');
    // Half a lease past it: the extension made as the outcome was held has run out too, the later ones have not.
    await eventually(() => clock() > originalEnd + SHORT_LEASE_US / 2, 'well past the end of the lease it was claimed with');

    assert.equal(await others.intake(), 0, "the other instance's claim does not take it");
    const waiting = await s.read(row.uuid);
    assert.deepEqual([waiting.state, waiting.locked_by, waiting.attempts], ['deliver', 'me', 0]);
    assert.ok(waiting.locked_until! > clock(), 'its lease runs on in the database');

    await s.faulty.restore();
    settler.retryNow();
    await mine.idle();
    assert.equal(settler.holding, false);
    const settled = await s.read(row.uuid);
    assert.deepEqual([settled.state, settled.target_code, settled.attempts, settled.locked_by], ['delivered', 200, 1, null]);
    assert.deepEqual(await s.attempts(row.uuid), [{ stage: 'deliver', status: 200 }]);
    assert.equal(await others.intake(), 0);
    await others.idle();
    assert.equal(stub.requests.length, 1, 'the target had it once');
  });
});
