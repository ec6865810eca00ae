/**
 * Disk: the bytes the service keeps for each event, each match and each delivery attempt, measured
 * on the real server process and its database (not computed from the schema).
 *
 * Three subscriptions of three owners all match the facility's example event
 * (docs/examples/pacifica-ingest-event-v0.1.json, only its id varied: a random uuid), so each
 * event is one event row, three match rows, three policy calls (the stub allows: a policy call
 * that decides records no attempt) and three deliveries. The server is stopped (SIGTERM) before
 * each measurement:
 * 1. after `dbsync` and the subscriptions: the baseline;
 * 2. after DISK_EVENTS events, every delivery recorded delivered at its first try (one attempt a
 *    match): bytes per event (with its matches and their attempts), of which the events table's
 *    share is the event row, and the rest divided by the matches is a match (with its attempt);
 * 3. after DISK_RETRIED_EVENTS more events whose target answers each delivery 500 twice before
 *    204 (retries 100 ms apart), three attempts a match: the growth per event beyond step 2's,
 *    divided by the two extra attempts of each match, is the cost of one more attempt (its row,
 *    and what it adds to its match row's updates).
 * What is measured: SQLite, the pages in use (page_count - freelist_count, times page_size)
 * after a full checkpoint, i.e. the file less its free pages; PostgreSQL, the sum of
 * pg_total_relation_size (heap, TOAST, indexes, free-space and visibility maps) of every table
 * of the service's schema. Both as written, with PostgreSQL's autovacuum at its defaults, then
 * compacted (VACUUM, VACUUM FULL on PostgreSQL), where the figures come from each table's size
 * over its rows. Neither counts the write-ahead log: SQLite's -wal file (its largest size while
 * the events arrived is reported) is removed at a clean stop; PostgreSQL's pg_wal is the
 * cluster's, bounded by its max_wal_size.
 */
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Pool } from 'undici';
import { facilityEventTextWithId } from '../test/support/fixtures.js';
import type { RunningServer } from '../test/support/processes.js';
import { type CountingTarget, startCountingTarget } from './counting-target.js';
import { MB } from './measure.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

export const DISK_EVENTS = 10_000;
export const DISK_RETRIED_EVENTS = 2_500;
/** Each retried delivery is answered 500 this many times, then 204. */
export const FAILURES_BEFORE_DELIVERY = 2;
/** Short retry delays, so the retried deliveries finish in seconds; one spare. */
const RETRY_DELAYS = '100ms,100ms,100ms';
const CONNECTIONS = 32;
const DELIVERED_TIMEOUT_MS = 180_000;
/** The service's own tables; the rest of the schema (the migrations' record) is counted in the totals. */
const EVENTS = 'events';
const MATCHES = 'matches';
const ATTEMPTS = 'attempts';

/** Three owners, one subscription each, all matching the facility's example event. */
const SUBSCRIPTIONS = [
  { owner: 'disk-1', jsonpath: `$.data[?@.mimetype == 'text/plain']` },
  { owner: 'disk-2', jsonpath: `$.data[?@.destinationTable == 'Transactions.instrument' && @.value == 54]` },
  { owner: 'disk-3', jsonpath: `$.data[?@.destinationTable == 'Transactions.submitter' && @.value == 10]` },
];
export const DISK_MATCHES_PER_EVENT = SUBSCRIPTIONS.length;

/** Bytes the database holds: in all, and by table (with its indexes). */
interface Footprint {
  total: number;
  tables: Map<string, number>;
  /** PostgreSQL: how many times autovacuum has processed the schema's tables so far. */
  autovacuums?: number;
}

interface Counts {
  events: number;
  matches: number;
  delivered: number;
  attempts: number;
}

/** The database beside the server: its rows counted while it runs, its size measured while it is stopped. */
interface Inspector {
  /** What `footprint(true)` runs first. */
  readonly compaction: string;
  counts(): Promise<Counts>;
  /** Bytes in use; with `compact`, after rewriting every table. */
  footprint(compact: boolean): Promise<Footprint>;
  /** Starts watching the write-ahead log file; the function returned stops, giving its largest size seen in bytes (SQLite; undefined on PostgreSQL). */
  watchLog(): () => number | undefined;
  close(): Promise<void>;
}

export async function benchDisk(label: string, databaseUrl: string): Promise<Row[]> {
  const target = await startCountingTarget();
  const policy = await startCountingTarget();
  const env = { NOTIFICATIONS_POLICY_URL: policy.url, NOTIFICATIONS_RETRY_DELAYS: RETRY_DELAYS };
  const inspector = databaseUrl.startsWith('sqlite:')
    ? sqliteInspector(databaseUrl.slice('sqlite:'.length))
    : await postgresInspector(databaseUrl);
  try {
    await withServer(databaseUrl, env, (server) => createSubscriptions(server, target.url));
    const before = await inspector.footprint(false);

    const stopWatching = inspector.watchLog();
    const first = await withServer(databaseUrl, env, (server) => sendAndDeliver(server, inspector, target, DISK_EVENTS, 1));
    const walPeak = stopWatching();
    const delivered = await inspector.footprint(false);

    target.failFirst(FAILURES_BEFORE_DELIVERY);
    const retried = await withServer(databaseUrl, env, (server) =>
      sendAndDeliver(server, inspector, target, DISK_RETRIED_EVENTS, 1 + FAILURES_BEFORE_DELIVERY),
    );
    const afterRetries = await inspector.footprint(false);
    const compacted = await inspector.footprint(true);

    const m = DISK_MATCHES_PER_EVENT;
    const grown = (to: Footprint, from: Footprint, table?: string) =>
      table === undefined ? to.total - from.total : (to.tables.get(table) ?? 0) - (from.tables.get(table) ?? 0);
    const perEvent = grown(delivered, before) / DISK_EVENTS;
    const eventRow = grown(delivered, before, EVENTS) / DISK_EVENTS;
    const perRetriedEvent = grown(afterRetries, delivered) / DISK_RETRIED_EVENTS;
    const common = {
      database: label,
      events: `${DISK_EVENTS.toLocaleString('en-US')} + ${DISK_RETRIED_EVENTS.toLocaleString('en-US')}`,
      'matches/event': m,
      'event JSON bytes': first.eventBytes,
    };
    const asWritten: Row = {
      ...common,
      measured: 'as written',
      'bytes/event': perEvent,
      'event row': eventRow,
      'bytes/match': (perEvent - eventRow) / m,
      'bytes/extra attempt': (perRetriedEvent - perEvent) / (m * FAILURES_BEFORE_DELIVERY),
      'WAL peak MB': walPeak === undefined ? 'n/a' : walPeak / MB,
      autovacuums: afterRetries.autovacuums ?? 'n/a',
    };
    // Compacted: each table's size over its rows (those of both runs).
    const { counts } = retried;
    const compactedEventRow = grown(compacted, before, EVENTS) / counts.events;
    const compactedMatchRow = grown(compacted, before, MATCHES) / counts.matches;
    const compactedAttempt = grown(compacted, before, ATTEMPTS) / counts.attempts;
    const compactedRow: Row = {
      ...common,
      measured: inspector.compaction,
      'bytes/event': compactedEventRow + m * (compactedMatchRow + compactedAttempt),
      'event row': compactedEventRow,
      'bytes/match': compactedMatchRow + compactedAttempt,
      'bytes/extra attempt': compactedAttempt,
      'WAL peak MB': '',
      autovacuums: '',
    };
    return [asWritten, compactedRow];
  } finally {
    await inspector.close();
    await target.close();
    await policy.close();
  }
}

/** Starts the server (after `dbsync`), runs `work`, and stops it, which must end cleanly. */
async function withServer<T>(databaseUrl: string, env: Record<string, string>, work: (server: RunningServer) => Promise<T>): Promise<T> {
  const server = await startBenchServer(databaseUrl, env);
  let result: T;
  try {
    result = await work(server);
  } catch (error) {
    await server.stop();
    throw error;
  }
  const code = await server.stop();
  if (code !== 0) throw new Error(`the server exited with ${code}:\n${server.logs()}`);
  return result;
}

async function createSubscriptions(server: RunningServer, targetUrl: string): Promise<void> {
  for (const { owner, jsonpath } of SUBSCRIPTIONS) {
    const response = await fetch(`${server.url}/eventmatch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'http-remote-user': owner },
      body: JSON.stringify({ name: `disk ${owner}`, jsonpath, target_url: targetUrl }),
    });
    if (response.status !== 200) throw new Error(`creating a subscription: ${response.status} ${await response.text()}`);
  }
}

/**
 * `count` events through POST /receive, each answered with DISK_MATCHES_PER_EVENT matches, then
 * waits until every match in the database is delivered and the attempts are those expected
 * (`attemptsEach` a match of these events).
 */
async function sendAndDeliver(
  server: RunningServer,
  inspector: Inspector,
  target: CountingTarget,
  count: number,
  attemptsEach: number,
): Promise<{ eventBytes: number; counts: Counts }> {
  const start = await inspector.counts();
  const eventBytes = await sendEvents(server.url, count);
  const expected: Counts = {
    events: start.events + count,
    matches: start.matches + count * DISK_MATCHES_PER_EVENT,
    delivered: start.delivered + count * DISK_MATCHES_PER_EVENT,
    attempts: start.attempts + count * DISK_MATCHES_PER_EVENT * attemptsEach,
  };
  const deadline = performance.now() + DELIVERED_TIMEOUT_MS;
  for (;;) {
    const counts = await inspector.counts();
    if (counts.delivered >= expected.delivered && counts.attempts >= expected.attempts) {
      if ((Object.keys(expected) as Array<keyof Counts>).some((key) => counts[key] !== expected[key]))
        throw new Error(`expected ${JSON.stringify(expected)} in the database, found ${JSON.stringify(counts)}`);
      return { eventBytes, counts };
    }
    if (performance.now() > deadline)
      throw new Error(
        `not all delivered after ${DELIVERED_TIMEOUT_MS} ms: ${JSON.stringify(counts)} of ${JSON.stringify(expected)}; the target answered ${target.delivered()} (and ${target.failed()} 500s)`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Sends `count` copies of the facility's event, each with its own id; resolves with the mean size of one, in bytes. */
async function sendEvents(serverUrl: string, count: number): Promise<number> {
  const pool = new Pool(new URL(serverUrl).origin, { connections: CONNECTIONS });
  let sent = 0;
  let bytes = 0;
  const sender = async () => {
    while (sent < count) {
      sent++;
      const body = facilityEventTextWithId(randomUUID());
      bytes += Buffer.byteLength(body);
      const response = await pool.request({
        method: 'POST',
        path: '/receive',
        headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' },
        body,
      });
      const answer = await response.body.text();
      const matches = response.statusCode === 200 ? (JSON.parse(answer) as { matches?: number }).matches : undefined;
      if (matches !== DISK_MATCHES_PER_EVENT) throw new Error(`POST /receive answered ${response.statusCode} ${answer}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: CONNECTIONS }, sender));
  } finally {
    await pool.close();
  }
  return bytes / count;
}

// The service's own events (five failures in a row tell the owner: none of these owners has
// another subscription, so they have no matches) are left out: a few dozen rows among 12,500.
const COUNTS_SQL = `select
  (select count(*) from events where source <> '/svc-notifications') as events,
  (select count(*) from matches) as matches,
  (select count(*) from matches where state = 'delivered') as delivered,
  (select count(*) from attempts) as attempts`;

function sqliteInspector(path: string): Inspector {
  const open = (readonly: boolean) => new SQLite(path, { readonly, fileMustExist: true });
  return {
    compaction: 'VACUUM',
    counts: async () => {
      const db = open(true);
      try {
        return db.prepare(COUNTS_SQL).get() as Counts;
      } finally {
        db.close();
      }
    },
    footprint: async (compact) => {
      const db = open(false);
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
        if (compact) db.exec('VACUUM');
        const page = (name: string) => db.pragma(name, { simple: true }) as number;
        const total = (page('page_count') - page('freelist_count')) * page('page_size');
        // dbstat: the pages of each b-tree (a table, or an index named after its table in sqlite_schema).
        const rows = db
          .prepare(
            `select coalesce(m.tbl_name, s.name) as name, sum(s.pgsize) as bytes
             from dbstat as s left join sqlite_schema as m on m.name = s.name group by 1`,
          )
          .all() as Array<{ name: string; bytes: number }>;
        return { total, tables: new Map(rows.map((r) => [r.name, r.bytes])) };
      } finally {
        db.close();
      }
    },
    watchLog: () => {
      let peak = 0;
      const timer = setInterval(() => {
        // The server removes the file when it stops.
        peak = Math.max(peak, statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0);
      }, 100);
      return () => {
        clearInterval(timer);
        return peak;
      };
    },
    close: async () => undefined,
  };
}

async function postgresInspector(databaseUrl: string): Promise<Inspector> {
  const url = new URL(databaseUrl);
  const schema = url.searchParams.get('schema') ?? 'public';
  url.searchParams.delete('schema');
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  await client.query(`set search_path to "${schema}"`);
  const tables = async () =>
    (
      await client.query<{ name: string; bytes: string }>(
        `select c.relname as name, pg_total_relation_size(c.oid) as bytes
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where n.nspname = $1 and c.relkind = 'r'`,
        [schema],
      )
    ).rows;
  return {
    compaction: 'VACUUM FULL',
    counts: async () => {
      const row = (await client.query<Record<keyof Counts, string>>(COUNTS_SQL)).rows[0]!;
      return { events: Number(row.events), matches: Number(row.matches), delivered: Number(row.delivered), attempts: Number(row.attempts) };
    },
    footprint: async (compact) => {
      if (compact) for (const { name } of await tables()) await client.query(`vacuum full "${schema}"."${name}"`);
      const sizes = new Map((await tables()).map((r) => [r.name, Number(r.bytes)]));
      const vacuums = await client.query<{ n: string }>(
        'select coalesce(sum(autovacuum_count), 0) as n from pg_stat_user_tables where schemaname = $1',
        [schema],
      );
      return { total: [...sizes.values()].reduce((a, b) => a + b, 0), tables: sizes, autovacuums: Number(vacuums.rows[0]!.n) };
    },
    watchLog: () => () => undefined,
    close: () => client.end(),
  };
}
