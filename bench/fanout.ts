/**
 * Pull fan-out (PRODUCT.md, "Reliable under faults and fan-out"): many readers of few pull
 * subscriptions, against the server process on a fresh database. 50 pull subscriptions of 5
 * owners (allow-all, no policy service), every one matching every event of the bench; readers
 * spread evenly over them, each on a connection of its own (pull-readers.ts). On PostgreSQL a
 * proxy in a thread of its own (database-proxy-thread.ts) stands between the server and the
 * database for the whole section and counts the chunks the server sends it (about one a
 * statement).
 *
 * 1. idle: 10 s with no reader (the service's own background work), then 5,000 streams and
 *    5,000 long polls (wait=60) held, once the waiters gauge says 10,000, for another 10 s: the
 *    database operations readers caused (notifications_pull_database_operations_total where the
 *    server has it, else n/a), PostgreSQL chunks/s and the server's CPU ms/s in both windows, and
 *    its resident memory.
 * 2. wake: 2,000 streams and 1,000 long polls waiting at the latest cursor; one event that
 *    matches all 50 subscriptions; the time from just before its POST to its arrival at each
 *    reader. 5 rounds (the long polls ask again with the new cursor; the next round once 3,000
 *    wait again): p50/p99/max over every sample, and the readers' database operations per wake.
 * 3. burst: the same 3,000 readers; 200 events POSTed by 20 posters at once while 500 of the
 *    streams are closed by the client and opened again with Last-Event-ID, spread over the burst
 *    (one more each time 2 of 5 events are answered): streams the server ended, answers 503,
 *    POSTs not answered 200 (each POSTed again, so that the 200 events are all logged), and
 *    whether and when every reader had every event.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningServer } from '../test/support/processes.js';
import { processMs } from './cpu-time.js';
import { type CountingProxy, startDatabaseProxyThread } from './database-proxy-thread.js';
import { MB, percentile } from './measure.js';
import { operationsBetween, operationsText, pullMetrics, waitersFallTo, waitersReach } from './pull-metrics.js';
import { type PullReader, type ReaderCounts, ReaderPool } from './pull-readers.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

export const FANOUT_SUBSCRIPTIONS = 50;
const OWNERS = 5;
const IDLE_STREAMS = 5_000;
const IDLE_LONG_POLLS = 5_000;
export const IDLE_READERS = IDLE_STREAMS + IDLE_LONG_POLLS;
const WAKE_STREAMS = 2_000;
const WAKE_LONG_POLLS = 1_000;
export const WAKE_READERS = WAKE_STREAMS + WAKE_LONG_POLLS;
export const WAKE_ROUNDS = 5;
export const BURST_EVENTS = 200;
const BURST_POSTERS = 20;
export const BURST_RECONNECTS = 500;
/** A long poll's wait, the most the API takes. */
const WAIT_S = 60;
const WINDOW_MS = 10_000;
/** Before each idle window: the work of starting (or of opening readers) is over. */
const SETTLE_MS = 2_000;
/** Readers opened at a time; the next ones once the waiters gauge has them all. */
const OPEN_BATCH = 500;
/** Between a wake round's readers all waiting again and its event. */
const ROUND_PAUSE_MS = 500;
const ARRIVAL_TIMEOUT_MS = 30_000;
const COMPLETE_TIMEOUT_MS = 120_000;
const POST_TRIES = 10;
const STOP_TIMEOUT_MS = 20_000;
/** Sockets besides the readers': the server's database connections, the proxy, stdio, the posters. */
const SPARE_FILES = 500;

export const FANOUT_GOALS = {
  idle: '0 reader ops/s',
  wake: 'p99 < 1,000 ms, all reached',
  burst: '0 streams ended, 0 503',
} as const;

export type FanoutPhase = keyof typeof FANOUT_GOALS;

export const FANOUT_TABLES: ReadonlyArray<readonly [FanoutPhase, string]> = [
  [
    'idle',
    `Pull fan-out, idle: ${IDLE_STREAMS.toLocaleString('en-US')} streams and ${IDLE_LONG_POLLS.toLocaleString('en-US')} long polls (wait=${WAIT_S}) of 50 subscriptions held for 10 s, beside 10 s with no reader (PostgreSQL chunks: writes the server sent through a counting proxy)`,
  ],
  [
    'wake',
    `Pull fan-out, wake-up: one event matching all 50 subscriptions to ${WAKE_STREAMS.toLocaleString('en-US')} streams and ${WAKE_LONG_POLLS.toLocaleString('en-US')} long polls waiting, ${WAKE_ROUNDS} rounds; from just before the POST to the event's arrival at each reader`,
  ],
  [
    'burst',
    `Pull fan-out, burst: ${BURST_EVENTS} events POSTed by ${BURST_POSTERS} posters at once to the same 3,000 readers while ${BURST_RECONNECTS} streams reconnect with Last-Event-ID`,
  ],
];

interface Context {
  label: string;
  server: RunningServer;
  pid: number;
  pool: ReaderPool;
  proxy: CountingProxy | undefined;
  /** The owner of each subscription, by uuid. */
  owners: Map<string, string>;
  subscriptions: string[];
}

export async function benchFanout(label: string, databaseUrl: string): Promise<Row[]> {
  const files = openFilesLimit();
  const needed = IDLE_READERS + SPARE_FILES;
  if (files < needed) {
    const message = `not measured: the open-files limit (ulimit -n) is ${files}, and ${IDLE_READERS.toLocaleString('en-US')} readers need ${needed.toLocaleString('en-US')}; raise it (ulimit -n 20000) and run again`;
    console.error(`fanout: ${message}`);
    return FANOUT_TABLES.map(([phase]) => ({ database: label, phase, readers: message }));
  }
  const proxy = databaseUrl.startsWith('postgres') ? await startDatabaseProxyThread(databaseUrl) : undefined;
  let server: RunningServer | undefined;
  let pool: ReaderPool | undefined;
  try {
    server = await startBenchServer(proxy?.url ?? databaseUrl);
    pool = new ReaderPool(Number(new URL(server.url).port));
    const owners = await createSubscriptions(server);
    const context: Context = { label, server, pid: server.process.pid!, pool, proxy, owners, subscriptions: [...owners.keys()] };
    const idle = await idlePhase(context);
    const wake = await wakePhase(context);
    const burst = await burstPhase(context);
    return [idle, wake, burst];
  } finally {
    pool?.stopAll();
    if (server) {
      reportServerLog(label, server.logs());
      await stop(server);
    }
    await proxy?.close();
  }
}

/** 50 pull subscriptions over 5 owners, each matching every event with `data.n`; owner by uuid. */
async function createSubscriptions(server: RunningServer): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  for (let i = 0; i < FANOUT_SUBSCRIPTIONS; i++) {
    const owner = `fanout-${i % OWNERS}`;
    const response = await fetch(`${server.url}/eventmatch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'http-remote-user': owner },
      body: JSON.stringify({ name: `fanout ${i}`, jsonpath: '$.data.n', delivery: 'pull' }),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`creating a pull subscription answered ${response.status}: ${text}`);
    owners.set((JSON.parse(text) as { uuid: string }).uuid, owner);
  }
  return owners;
}

async function idlePhase(context: Context): Promise<Row> {
  const { server, pid, pool } = context;
  await sleep(SETTLE_MS);
  collectGarbage();
  const alone = await measureWindow(context);
  const residentAlone = residentMb(pid);
  await openReaders(context, IDLE_STREAMS, 'stream', 0);
  const longPollsFrom = performance.now();
  await openReaders(context, IDLE_LONG_POLLS, 'long poll', IDLE_STREAMS);
  await sleep(SETTLE_MS);
  const requests = pool.counts.requests;
  const held = await measureWindow(context);
  const requestsInWindow = pool.counts.requests - requests;
  const resident = residentMb(pid);
  const sinceFirstLongPoll = performance.now() - longPollsFrom;
  if (sinceFirstLongPoll > WAIT_S * 1000)
    console.error(
      `fanout ${context.label}: the idle window ended ${(sinceFirstLongPoll / 1000).toFixed(0)} s after the first long poll (wait=${WAIT_S}): some asked again during it`,
    );
  pool.stopAll();
  const gone = await waitersFallTo(server.url, 0);
  if (!gone.reached) console.error(`fanout ${context.label}: ${gone.waiters} waiters still counted 30 s after every idle reader hung up`);
  const perSecond = held.operations ? held.operations.total! / held.seconds : NaN;
  return {
    database: context.label,
    phase: 'idle',
    readers: held.waiters,
    'reader ops/s': perSecond,
    'reader ops in 10 s': operationsText(held.operations),
    'PG chunks/s with readers': context.proxy ? held.chunksPerSecond : '–',
    'PG chunks/s without': context.proxy ? alone.chunksPerSecond : '–',
    'server CPU ms/s with readers': held.cpuMsPerSecond,
    'server CPU ms/s without': alone.cpuMsPerSecond,
    'server RSS MB with readers': resident,
    'server RSS MB without': residentAlone,
    'reader requests in window': requestsInWindow,
    goal: FANOUT_GOALS.idle,
    met: Number.isNaN(perSecond) ? 'n/a' : perSecond === 0 ? 'yes' : 'no',
  };
}

interface Window {
  seconds: number;
  waiters: number;
  operations: Record<string, number> | undefined;
  chunksPerSecond: number;
  cpuMsPerSecond: number;
}

/** WINDOW_MS of nothing done by the bench; the scrapes of /metrics are outside the CPU and chunk counts. */
async function measureWindow({ server, pid, proxy }: Context): Promise<Window> {
  const before = await pullMetrics(server.url);
  const chunks = (await proxy?.sent()) ?? NaN;
  const cpu = processMs(pid);
  const started = performance.now();
  await sleep(WINDOW_MS);
  const cpuAfter = processMs(pid);
  const chunksAfter = (await proxy?.sent()) ?? NaN;
  const seconds = (performance.now() - started) / 1000;
  const after = await pullMetrics(server.url);
  return {
    seconds,
    waiters: after.waiters,
    operations: operationsBetween(before, after),
    chunksPerSecond: (chunksAfter - chunks) / seconds,
    cpuMsPerSecond: (cpuAfter - cpu) / seconds,
  };
}

/**
 * `count` readers of `kind`, reader i on subscription (first + i) mod 50, opened OPEN_BATCH at a
 * time, each batch once the gauge counts the one before: the server never has more than a
 * batch of lookups and first reads at once, and the listen queue never overflows.
 */
async function openReaders(context: Context, count: number, kind: 'stream' | 'long poll', first: number): Promise<PullReader[]> {
  const { server, pool, subscriptions, owners } = context;
  const base = (await pullMetrics(server.url)).waiters;
  const readers: PullReader[] = [];
  for (let i = 0; i < count; i += OPEN_BATCH) {
    for (let j = i; j < Math.min(count, i + OPEN_BATCH); j++) {
      const subscription = subscriptions[(first + j) % subscriptions.length]!;
      const owner = owners.get(subscription)!;
      const reader = kind === 'stream' ? pool.stream(owner, subscription) : pool.longPoll(owner, subscription, WAIT_S);
      reader.start();
      readers.push(reader);
    }
    const target = base + Math.min(count, i + OPEN_BATCH);
    const reached = await waitersReach(server.url, target);
    if (!reached.reached)
      console.error(
        `fanout ${context.label}: ${reached.waiters} waiters after opening ${readers.length} ${kind} readers (expected ${target}); going on`,
      );
  }
  return readers;
}

async function wakePhase(context: Context): Promise<Row> {
  const { server, pid, pool, proxy, label } = context;
  await openReaders(context, WAKE_STREAMS, 'stream', 0);
  await openReaders(context, WAKE_LONG_POLLS, 'long poll', WAKE_STREAMS);
  const readers = pool.readers;
  const samples: number[] = [];
  const reachedPerRound: number[] = [];
  let postsNotOk = 0;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  await waitersAll(context, WAKE_READERS, 'before the first wake');
  // What the idle phase's 10,000 readers left behind is collected now, not during a wake.
  collectGarbage();
  await sleep(ROUND_PAUSE_MS);
  const before = await pullMetrics(server.url);
  const chunks = (await proxy?.sent()) ?? NaN;
  const cpu = processMs(pid);
  const bench = process.cpuUsage();
  loop.enable();
  for (let round = 0; round < WAKE_ROUNDS; round++) {
    if (round > 0) {
      await waitersAll(context, WAKE_READERS, `before wake ${round + 1}`);
      await sleep(ROUND_PAUSE_MS);
    }
    for (const reader of readers) reader.mark();
    const start = performance.now();
    const { status } = await postEvent(server.url, `fanout-wake-${label}-${round}`, round);
    if (status !== 200) postsNotOk++;
    await until(() => readers.every((reader) => reader.firstNewAt !== undefined), ARRIVAL_TIMEOUT_MS);
    let reached = 0;
    for (const reader of readers) {
      if (reader.firstNewAt === undefined) continue;
      reached++;
      samples.push(reader.firstNewAt - start);
    }
    reachedPerRound.push(reached);
  }
  // The long polls' asking again, with the new cursor, belongs to the wake.
  await waitersAll(context, WAKE_READERS, 'after the last wake');
  loop.disable();
  const benchCpu = process.cpuUsage(bench);
  const cpuAfter = processMs(pid);
  const chunksAfter = (await proxy?.sent()) ?? NaN;
  const after = await pullMetrics(server.url);
  const operations = operationsBetween(before, after);
  const reached = reachedPerRound.reduce((a, b) => a + b, 0);
  const p99 = percentile(samples, 99);
  return {
    database: label,
    phase: 'wake',
    readers: WAKE_READERS,
    reached: `${reached.toLocaleString('en-US')} / ${(WAKE_READERS * WAKE_ROUNDS).toLocaleString('en-US')}`,
    'p50 ms': percentile(samples, 50),
    'p99 ms': p99,
    'max ms': samples.length === 0 ? NaN : Math.max(...samples),
    'reader ops/wake': operations ? operations.total! / WAKE_ROUNDS : NaN,
    'reads/wake': operations ? (operations.read ?? 0) / WAKE_ROUNDS : NaN,
    'ops/wake by operation': operationsText(operations, WAKE_ROUNDS),
    'PG chunks/wake': proxy ? (chunksAfter - chunks) / WAKE_ROUNDS : '–',
    'server CPU ms/wake': (cpuAfter - cpu) / WAKE_ROUNDS,
    'bench CPU ms/wake': (benchCpu.user + benchCpu.system) / 1000 / WAKE_ROUNDS,
    'bench loop delay max ms': loop.max / 1e6,
    'POSTs not 200': postsNotOk,
    goal: FANOUT_GOALS.wake,
    met: p99 < 1000 && reached === WAKE_READERS * WAKE_ROUNDS ? 'yes' : 'no',
  };
}

async function burstPhase(context: Context): Promise<Row> {
  const { server, pool, label } = context;
  const readers = pool.readers;
  await waitersAll(context, WAKE_READERS, 'before the burst');
  collectGarbage();
  await sleep(ROUND_PAUSE_MS);
  pool.resetCounts();
  for (const reader of readers) reader.mark();
  const reconnecting = pool.streams().slice(0, BURST_RECONNECTS);
  let reconnected = 0;
  const reconnectUpTo = (due: number) => {
    while (reconnected < Math.min(due, reconnecting.length)) reconnecting[reconnected++]!.reconnect();
  };
  const bench = process.cpuUsage();
  const cpu = processMs(context.pid);
  const start = performance.now();
  const posts = await postBurst(server.url, label, (answered) => reconnectUpTo(Math.floor((answered * BURST_RECONNECTS) / BURST_EVENTS)));
  reconnectUpTo(BURST_RECONNECTS);
  const postedIn = performance.now() - start;
  const accepted = posts.accepted;
  const complete = () => readers.every((reader) => reader.seen.size >= accepted);
  await until(complete, COMPLETE_TIMEOUT_MS);
  const benchCpu = process.cpuUsage(bench);
  const serverCpu = processMs(context.pid) - cpu;
  const incomplete = readers.filter((reader) => reader.seen.size < accepted);
  const missing = incomplete.reduce((sum, reader) => sum + accepted - reader.seen.size, 0);
  const lastComplete = incomplete.length === 0 ? Math.max(...readers.map((reader) => reader.lastNewAt ?? start)) - start : NaN;
  const counts = { ...pool.counts };
  const unavailable = counts.unavailable + posts.unavailable;
  const ofReaders = (what: keyof ReaderCounts) =>
    `${pool.counts[what].toLocaleString('en-US')} (${pool.affected(what).toLocaleString('en-US')})`;
  return {
    database: label,
    phase: 'burst',
    readers: readers.length,
    'events logged': accepted,
    'POSTed in s': postedIn / 1000,
    'POST p99 ms': percentile(posts.durations, 99),
    'events refused (answers not 200)': `${posts.refused} (${(posts.notOk + posts.failed).toLocaleString('en-US')})`,
    'client reconnects': reconnected,
    'streams ended by server (readers)': ofReaders('serverEnded'),
    'reader 503s (readers)': ofReaders('unavailable'),
    'reader other non-200': counts.otherStatus,
    'reader connection errors': counts.errors,
    'every reader got all':
      incomplete.length === 0
        ? 'yes'
        : `no: ${incomplete.length.toLocaleString('en-US')} readers missed ${missing.toLocaleString('en-US')} events after ${COMPLETE_TIMEOUT_MS / 1000} s`,
    'last reader complete s': lastComplete / 1000,
    'server CPU s': serverCpu / 1000,
    'bench CPU s': (benchCpu.user + benchCpu.system) / 1e6,
    goal: FANOUT_GOALS.burst,
    met: counts.serverEnded === 0 && unavailable === 0 && posts.notOk === 0 && posts.failed === 0 ? 'yes' : 'no',
  };
}

interface Burst {
  /** Events answered 200 (each POSTed until it was, at most POST_TRIES times). */
  accepted: number;
  /** Events whose first POST was not answered 200. */
  refused: number;
  /** Answers other than 200, retries included; of which 503. */
  notOk: number;
  unavailable: number;
  /** POSTs that got no answer. */
  failed: number;
  /** Each POST's time to its answer, ms. */
  durations: number[];
}

/** BURST_EVENTS events by BURST_POSTERS posters at once; `onAnswered(n)` after the first answer to the nth event. */
async function postBurst(serverUrl: string, label: string, onAnswered: (answered: number) => void): Promise<Burst> {
  const burst: Burst = { accepted: 0, refused: 0, notOk: 0, unavailable: 0, failed: 0, durations: [] };
  let nextEvent = 0;
  let answered = 0;
  const poster = async () => {
    for (let n = nextEvent++; n < BURST_EVENTS; n = nextEvent++) {
      for (let attempt = 1; attempt <= POST_TRIES; attempt++) {
        const started = performance.now();
        const { status, retryAfterS } = await postEvent(serverUrl, `fanout-burst-${label}-${n}`, n);
        burst.durations.push(performance.now() - started);
        if (attempt === 1) onAnswered(++answered);
        if (attempt === 1 && status !== 200) burst.refused++;
        if (status === 200) {
          burst.accepted++;
          break;
        }
        if (status === 0) burst.failed++;
        else burst.notOk++;
        if (status === 503) burst.unavailable++;
        await sleep(Math.min(retryAfterS ?? 1, 5) * 1000);
      }
    }
  };
  await Promise.all(Array.from({ length: BURST_POSTERS }, poster));
  return burst;
}

/** One event matching every subscription (`data.n`), structured mode; status 0 when no answer came. */
async function postEvent(serverUrl: string, id: string, n: number): Promise<{ status: number; retryAfterS: number | undefined }> {
  const event = { specversion: '1.0', id, source: '/bench/fanout', type: 'bench.fanout', datacontenttype: 'application/json', data: { n } };
  try {
    const response = await fetch(`${serverUrl}/receive`, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
      body: JSON.stringify(event),
    });
    await response.arrayBuffer();
    const retryAfter = Number(response.headers.get('retry-after') ?? NaN);
    return { status: response.status, retryAfterS: Number.isFinite(retryAfter) ? retryAfter : undefined };
  } catch {
    return { status: 0, retryAfterS: undefined };
  }
}

/** Until the gauge counts `count` waiters; says so (and goes on) when it does not within a minute. */
async function waitersAll(context: Context, count: number, when: string): Promise<void> {
  const reached = await waitersReach(context.server.url, count, 20_000, 60_000);
  if (!reached.reached) console.error(`fanout ${context.label}: ${reached.waiters} of ${count} readers waiting ${when}; going on`);
}

/** A full collection in this process, where node runs with --expose-gc (the npm script does): none lands in a measurement. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function until(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

/** The server's resident memory now, MB (VmRSS); NaN once it has gone. */
function residentMb(pid: number): number {
  try {
    const kB = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kB === undefined ? NaN : (Number(kB) * 1024) / MB;
  } catch {
    return NaN;
  }
}

/** This process's soft limit of open files (`ulimit -n`), which its children inherit; Infinity where /proc does not say. */
function openFilesLimit(): number {
  try {
    const soft = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return soft === undefined || soft === 'unlimited' ? Infinity : Number(soft);
  } catch {
    return Infinity;
  }
}

/** SIGTERM, and SIGKILL when it has not exited within STOP_TIMEOUT_MS. */
async function stop(server: RunningServer): Promise<void> {
  const stopped = await Promise.race([server.stop(), sleep(STOP_TIMEOUT_MS).then(() => 'timeout' as const)]);
  if (stopped === 'timeout') await server.stop('SIGKILL');
}

/** The server's warnings and errors of the section, counted by message (on stderr), each with its first error: what ended streams, what answered 503. */
function reportServerLog(label: string, output: string): void {
  const counts = new Map<string, { count: number; error: string }>();
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; level?: number | string; err?: { message?: string } };
      const key = `${entry.level} ${entry.msg ?? ''}`.slice(0, 160);
      const seen = counts.get(key);
      if (seen) seen.count++;
      else counts.set(key, { count: 1, error: entry.err?.message?.slice(0, 160) ?? '' });
    } catch {
      // not a log line
    }
  }
  if (counts.size === 0) return;
  console.error(`fanout ${label}: the server logged (level, message: count; the first one's error)`);
  for (const [key, { count, error }] of [...counts].sort((a, b) => b[1].count - a[1].count).slice(0, 10))
    console.error(`  ${key}: ${count}${error ? `; ${error}` : ''}`);
}
