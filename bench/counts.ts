/**
 * What the service asks of its database, counted rather than timed (counts repeat where
 * timings on a shared VM do not): the receive workload (receive.ts: 999 subscriptions, each
 * event matching three of three owners), 3,000 events sent evenly at 300/s, then drained until
 * the targets have answered every delivery. Two runs on fresh databases: "pipeline", targets
 * answering at once, and "burst", targets answering each delivery after 1 s throughout.
 *
 * - PostgreSQL (a database of the bench's own, postgres-counters.ts): rows inserted and
 *   updated (`matches` apart), WAL records and bytes, commits, and round trips: PostgreSQL's
 *   ReadyForQuery messages (one an exchange), counted by a proxy in a thread of its own
 *   (database-proxy-thread.ts), beside the chunks the server sends it and the connections it
 *   opens (each one's start-up is a commit to PostgreSQL), and autovacuum's runs in the
 *   database (its transactions are commits too).
 * - SQLite: bytes written to the `-wal` file (and to the database file, by checkpoints) and
 *   fsyncs (fdatasync and fsync), from `perf trace` (syscall-trace.ts).
 * - Idle: an instance that has been idle, not one slowing down: after the pipeline run's drain,
 *   nothing sent, the window starts once the runners' waits between empty rounds have grown to
 *   their longest (they double from 1 s to 30 s: runners/idle-wait.ts), and counts 60 s, two of
 *   those waits; the same counts a second.
 * - Creates: 100 POST /eventmatch after the idle window, one at a time (no batching), per create.
 * - Start-up: a database with 1,000,000 subscriptions (inserted straight into the table, as the
 *   memory section does), from spawning the server to /readyz answering 200.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/db/connect.js';
import { syncSchema } from '../src/db/migrate.js';
import { RUNNER_IDLE_POLL_MS, RUNNER_POLL_MS } from '../src/runners/runner-loop.js';
import { Random } from '../test/support/random.js';
import { startCountingTarget } from './counting-target.js';
import { type CountingProxy, startDatabaseProxyThread } from './database-proxy-thread.js';
import { addSubscriptionRows, facilityRows } from './memory.js';
import { secondsToReady, STARTUP_SUBSCRIPTIONS } from './startup.js';
import { type BenchPostgres, createBenchPostgres, difference, type PostgresSnapshot, STATS_FLUSH_MS } from './postgres-counters.js';
import {
  BURST_TARGET_CONCURRENCY,
  BURST_TARGET_DELAY_MS,
  createSubscriptions,
  MATCHES_PER_EVENT,
  pacedLoad,
  SUBSCRIPTIONS,
} from './receive.js';
import { startBenchServer } from './server.js';
import { type SyscallTrace, type SyscallWindow, startSyscallTrace } from './syscall-trace.js';
import type { Row } from './table.js';

export const COUNTS_RATE = 300;
export const COUNTS_SECONDS = 10;
/** After the last answer: the server records it (a commit or two) well within this. */
const SETTLE_MS = 2_000;
export const IDLE_SECONDS = 60;
/**
 * From the drain (the last answer) to the idle window: the last outcomes recorded, then the
 * runners' waits after empty rounds (1 s, 2 s, 4 s …) until every wait is the longest, and a margin.
 */
export const IDLE_SETTLE_MS = SETTLE_MS + backOffMs(RUNNER_POLL_MS, RUNNER_IDLE_POLL_MS) + 5_000;
/** Subscriptions created one at a time after the idle window. */
const CREATES = 100;
/** No answer at the target for this long (more than a slow target's delay): nothing more is coming. */
const DRAIN_QUIET_MS = 5_000;
const DRAIN_TIMEOUT_MS = 300_000;

export const COUNTS_TABLES: ReadonlyArray<readonly [string, string]> = [
  [
    'load',
    `Counts per event: ${SUBSCRIPTIONS} subscriptions, 3 matching each event (3 owners), ${(COUNTS_RATE * COUNTS_SECONDS).toLocaleString('en-US')} events at ${COUNTS_RATE}/s, drained; pipeline: targets answer at once, burst: after ${BURST_TARGET_DELAY_MS / 1000} s (PostgreSQL's WAL is the cluster's: see other databases' commits)`,
  ],
  [
    'idle',
    `Counts a second, idle: ${IDLE_SECONDS} s from ${IDLE_SETTLE_MS / 1000} s after the pipeline run's drain (the runners' waits grown to ${RUNNER_IDLE_POLL_MS / 1000} s), nothing sent`,
  ],
  ['creates', `Counts per POST /eventmatch: ${CREATES} creates after the idle window, one at a time`],
  [
    'start-up',
    `Start-up with ${STARTUP_SUBSCRIPTIONS.toLocaleString('en-US')} subscriptions: from spawning the server to /readyz answering 200`,
  ],
];

/** The counts on SQLite, and on PostgreSQL when `postgresBase` names a server. */
export async function benchCounts(postgresBase: string | undefined): Promise<Row[]> {
  const rows: Row[] = [];
  for (const mode of ['pipeline', 'burst'] as const) {
    rows.push(...(await onSqlite((url) => countedRun('sqlite', url, mode))));
    if (postgresBase) rows.push(...(await onPostgres(postgresBase, (database) => countedRun('postgres', database, mode))));
  }
  rows.push(await onSqlite((url) => startUp('sqlite', url)));
  if (postgresBase) rows.push(await onPostgres(postgresBase, (database) => startUp('postgres', database.url)));
  return rows;
}

async function onSqlite<T>(run: (url: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-bench-'));
  try {
    return await run(`sqlite:${join(dir, 'notifications.sqlite3')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function onPostgres<T>(base: string, run: (database: BenchPostgres) => Promise<T>): Promise<T> {
  const database = await createBenchPostgres(base);
  try {
    return await run(database);
  } finally {
    await database.drop();
  }
}

/** One moment's counters: PostgreSQL's and the proxy's, or a mark in the SQLite trace. */
interface Snapshot {
  at: number;
  postgres?: PostgresSnapshot;
  chunks?: number;
  roundTrips?: number;
  connections?: number;
  mark?: number;
}

/** What a window counted, in total. */
interface Counted {
  seconds: number;
  postgres?: PostgresSnapshot;
  roundTrips?: number;
  chunks?: number;
  connections?: number;
  sqlite?: { walBytes: number; databaseBytes: number; syncs: number } | string;
}

async function countedRun(kind: 'sqlite', database: string, mode: 'pipeline' | 'burst'): Promise<Row[]>;
async function countedRun(kind: 'postgres', database: BenchPostgres, mode: 'pipeline' | 'burst'): Promise<Row[]>;
async function countedRun(kind: 'sqlite' | 'postgres', database: string | BenchPostgres, mode: 'pipeline' | 'burst'): Promise<Row[]> {
  const postgres = typeof database === 'string' ? undefined : database;
  const url = typeof database === 'string' ? database : database.url;
  const burst = mode === 'burst';
  const target = await startCountingTarget({ delayMs: burst ? BURST_TARGET_DELAY_MS : 0 });
  const policy = await startCountingTarget();
  const proxy: CountingProxy | undefined = postgres ? await startDatabaseProxyThread(url) : undefined;
  let trace: SyscallTrace | string | undefined;
  const server = await startBenchServer(proxy?.url ?? url, {
    NOTIFICATIONS_POLICY_URL: policy.url,
    ...(burst ? { NOTIFICATIONS_TARGET_CONCURRENCY: BURST_TARGET_CONCURRENCY } : {}),
  });
  try {
    if (!postgres) trace = await startSyscallTrace(server.process.pid!).catch((error: Error) => error.message);
    const snapshot = async (): Promise<Snapshot> => ({
      at: performance.now(),
      postgres: await postgres?.snapshot(),
      chunks: await proxy?.sent(),
      roundTrips: await proxy?.readyForQuery(),
      connections: await proxy?.accepted(),
      mark: typeof trace === 'object' ? trace.mark() : undefined,
    });
    await createSubscriptions(server, target.url);
    await sleep(STATS_FLUSH_MS);
    const beforeLoad = await snapshot();
    const load = await pacedLoad(`${server.url}/receive`, `counts-${kind}-${mode}`, COUNTS_SECONDS, COUNTS_RATE);
    await target.reach(load.ok * MATCHES_PER_EVENT, DRAIN_QUIET_MS, DRAIN_TIMEOUT_MS);
    const drained = performance.now();
    await sleep(SETTLE_MS + STATS_FLUSH_MS);
    const afterLoad = await snapshot();
    const idleFrom = burst ? undefined : (await sleep(drained + IDLE_SETTLE_MS - performance.now()), await snapshot());
    const idle = idleFrom && (await sleep(IDLE_SECONDS * 1000), await snapshot());
    const created = idle && (await createOneByOne(server.url), await sleep(STATS_FLUSH_MS), await snapshot());
    if (typeof trace === 'object') await trace.stop();
    const walPath = `${url.slice('sqlite:'.length)}-wal`;
    const between = (from: Snapshot, to: Snapshot): Counted => ({
      seconds: (to.at - from.at) / 1000,
      postgres: from.postgres && to.postgres && difference(from.postgres, to.postgres),
      roundTrips: from.roundTrips !== undefined && to.roundTrips !== undefined ? to.roundTrips - from.roundTrips : undefined,
      chunks: from.chunks !== undefined && to.chunks !== undefined ? to.chunks - from.chunks : undefined,
      connections: from.connections !== undefined && to.connections !== undefined ? to.connections - from.connections : undefined,
      sqlite: typeof trace === 'object' ? sqliteCounts(trace, from.mark!, to.mark!, walPath) : undefined,
    });
    const delivered = target.delivered() >= load.ok * MATCHES_PER_EVENT;
    const rows: Row[] = [
      {
        phase: 'load',
        database: kind,
        run: mode,
        events: load.ok,
        ...perUnit(between(beforeLoad, afterLoad), load.ok, trace),
        'non-2xx': load.failed,
        'all delivered': delivered ? 'yes' : `${target.delivered()} of ${load.ok * MATCHES_PER_EVENT}`,
      },
    ];
    if (idleFrom && idle && created) {
      const counted = between(idleFrom, idle);
      rows.push({ phase: 'idle', database: kind, seconds: counted.seconds, ...perUnit(counted, counted.seconds, trace) });
      rows.push({ phase: 'creates', database: kind, creates: CREATES, ...perUnit(between(idle, created), CREATES, trace) });
    }
    return rows;
  } finally {
    if (typeof trace === 'object') await trace.stop();
    await server.stop();
    await proxy?.close();
    await target.close();
    await policy.close();
  }
}

/** The window's WAL bytes, database file bytes and syncs; why not, when perf could not count them. */
function sqliteCounts(trace: SyscallTrace, from: number, to: number, walPath: string): Counted['sqlite'] {
  let window: SyscallWindow;
  try {
    window = trace.window(from, to);
  } catch (error) {
    return (error as Error).message;
  }
  let walBytes = 0;
  let databaseBytes = 0;
  for (const [path, bytes] of window.bytesByPath) {
    if (path === walPath) walBytes += bytes;
    else if (path === walPath.slice(0, -'-wal'.length)) databaseBytes += bytes;
  }
  return { walBytes, databaseBytes, syncs: window.syncs };
}

/** A window's counts divided by `units` (events, creates, seconds); every row has every column, '–' where it does not apply. */
function perUnit(counted: Counted, units: number, trace: SyscallTrace | string | undefined): Row {
  const pg = counted.postgres;
  const sqlite = typeof counted.sqlite === 'object' ? counted.sqlite : undefined;
  const perf = typeof trace === 'string' ? trace : typeof counted.sqlite === 'string' ? counted.sqlite : '–';
  const of = (value: number | undefined, none: string) => (value === undefined ? none : value / units);
  return {
    'rows inserted': of(pg?.inserted, '–'),
    'rows updated': of(pg?.updated, '–'),
    'matches updates': of(pg?.matchesUpdated, '–'),
    'HOT updates': of(pg?.hotUpdated, '–'),
    'WAL records': of(pg?.walRecords, '–'),
    'WAL bytes': pg ? pg.walBytes / units : of(sqlite?.walBytes, perf),
    commits: of(pg?.commits, '–'),
    'round trips': of(counted.roundTrips, '–'),
    'chunks sent': of(counted.chunks, '–'),
    'connections opened': of(counted.connections, '–'),
    'autovacuum runs': of(pg?.autovacuums, '–'),
    fsyncs: of(sqlite?.syncs, perf),
    'database file bytes': of(sqlite?.databaseBytes, perf),
    'other databases’ commits': of(pg?.otherCommits, '–'),
  };
}

/** CREATES subscriptions, each POST /eventmatch answered before the next: what one create costs alone. */
async function createOneByOne(serverUrl: string): Promise<void> {
  for (let i = 0; i < CREATES; i++) {
    const response = await fetch(`${serverUrl}/eventmatch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'http-remote-user': `counts-${i % 10}` },
      body: JSON.stringify({
        name: `create ${i}`,
        jsonpath: `$.data[?@.value == 'no such project ${i}']`,
        target_url: 'http://127.0.0.1:9/hook',
      }),
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`creating a subscription: ${response.status}`);
  }
}

/** A database with STARTUP_SUBSCRIPTIONS rows, then the time from spawning the server to /readyz answering 200. */
async function startUp(kind: 'sqlite' | 'postgres', url: string): Promise<Row> {
  const loading = performance.now();
  const database = openDatabase(url);
  try {
    await syncSchema(database);
  } finally {
    await database.close();
  }
  await addSubscriptionRows(url, facilityRows(new Random(STARTUP_SUBSCRIPTIONS)), STARTUP_SUBSCRIPTIONS);
  const loadedS = (performance.now() - loading) / 1000;
  return {
    phase: 'start-up',
    database: kind,
    subscriptions: STARTUP_SUBSCRIPTIONS,
    'to /readyz s': await secondsToReady(url),
    'rows written in s': loadedS,
  };
}

/** How long a runner's waits after empty rounds, doubling from `pollMs`, take to reach `maxMs`. */
function backOffMs(pollMs: number, maxMs: number): number {
  let total = 0;
  for (let wait = pollMs; wait < maxMs; wait *= 2) total += wait;
  return total;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
