/**
 * `npm run bench [-- section…]`: prints the benchmark tables and writes bench/results.json.
 * Sections: jsonpath, matching, memory, startup, outbound, creates, receive, burst, counts, wal, latency, sustained, isolation, tracing,
 * brokers, disk, import, fanout
 * (all by default). The services run on SQLite, and on PostgreSQL too when NOTIFICATIONS_BENCH_DATABASE_URL
 * names a database. Run with --expose-gc (the npm script does) so heap figures are settled.
 * Last, the goals of issue 15 with the figures of this run (bench/goals.ts).
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { createPostgres, createSqlite } from '../test/support/database.js';
import { facilityEvent } from '../test/support/fixtures.js';
import { benchBrokers } from './brokers.js';
import { benchCounts, COUNTS_TABLES } from './counts.js';
import { benchCreates } from './creates.js';
import { benchDisk, DISK_EVENTS, DISK_MATCHES_PER_EVENT, DISK_RETRIED_EVENTS, FAILURES_BEFORE_DELIVERY } from './disk-usage.js';
import { benchFanout, FANOUT_TABLES } from './fanout.js';
import { benchImport, IMPORT_EVENTS, originalForBench } from './import.js';
import { benchIsolation } from './isolation.js';
import { goals } from './goals.js';
import { benchEvaluation } from './jsonpath-evaluation.js';
import { benchMemory } from './memory.js';
import { benchOutbound } from './outbound.js';
import { benchStartup } from './startup.js';
import { benchWalPages, WAL_SECONDS } from './wal-pages.js';
import { benchBurst, benchCeiling, benchLatency, benchReceive, benchSustained, benchTracing } from './receive.js';
import { benchMatching } from './subscription-matching.js';
import { printTable, type Row } from './table.js';

const SECTIONS = [
  'jsonpath',
  'matching',
  'memory',
  'startup',
  'outbound',
  'creates',
  'receive',
  'burst',
  'counts',
  'wal',
  'latency',
  'sustained',
  'isolation',
  'tracing',
  'brokers',
  'disk',
  'import',
  'fanout',
];

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const unknown = only.filter((s) => !SECTIONS.includes(s));
  if (unknown.length > 0) throw new Error(`unknown section ${unknown.join(', ')}; the sections are ${SECTIONS.join(', ')}`);
  const want = (section: string) => only.length === 0 || only.includes(section);
  const results: Record<string, Row[]> = {};
  const section = async (name: string, title: string, rows: () => Row[] | Promise<Row[]>) => {
    if (!want(name)) return;
    results[name] = await rows();
    printTable(title, results[name]);
  };

  console.log(`svc-notifications benchmark: node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}`);
  if (!process.env.NOTIFICATIONS_BENCH_DATABASE_URL)
    console.log('(SQLite only; set NOTIFICATIONS_BENCH_DATABASE_URL=postgres://… for PostgreSQL too)');
  await section('jsonpath', 'JSONPath: evaluations per second of one compiled expression (facility event, 2 KB)', () =>
    benchEvaluation(facilityEvent()),
  );
  await section('matching', 'Matching: one event against all subscriptions (facility-shaped, in this process)', () =>
    benchMatching([1_000, 10_000, 100_000, 1_000_000]),
  );
  await section('memory', 'The server process with 100,000 and 1,000,000 facility-shaped subscriptions loaded', () =>
    forEachBenchDatabase(benchMemory),
  );
  await section('startup', 'Start-up: from spawning the server to /readyz ready, 1,000,000 facility-shaped subscriptions', () =>
    forEachBenchDatabase(benchStartup),
  );

  await section(
    'outbound',
    "The outbound thread alone: 30,000 policy calls, then 30,000 signed deliveries, of the facility's event (2 KB) to a local server answering 204, 64 in flight",
    benchOutbound,
  );

  let ceiling = NaN;
  const cpu: Row[] = [];
  if (['creates', 'receive', 'burst'].some(want)) {
    ceiling = await benchCeiling(cpu);
    results.ceiling = [{ server: 'bare Fastify, same bodies', 'requests/s': ceiling }];
    printTable('Ceiling: a bare Fastify process parsing the same /receive bodies (autocannon, 32 connections, 10 s)', results.ceiling);
  }
  await section('creates', 'POST /eventmatch (autocannon, 32 connections, 10 s)', () =>
    forEachBenchDatabase((label, url) => benchCreates(label, url, ceiling, cpu)),
  );
  await section(
    'receive',
    'POST /receive, 999 subscriptions, 3 matching each event for 3 owners: 7 exchanges an event (32 connections, 10 s), then delivery end to end',
    () => forEachBenchDatabase((label, url) => benchReceive(label, url, ceiling, cpu)),
  );
  await section(
    'burst',
    'Burst intake: POST /receive as above while the target answers each delivery after 1 s (32 connections, 10 s), then until all are delivered',
    () => forEachBenchDatabase((label, url) => benchBurst(label, url, ceiling, cpu)),
  );
  if (cpu.length > 0) {
    results.cpu = cpu;
    // At 0.02 ms a request, a rounding step of two decimals would be half the ceiling's figure.
    printTable('CPU per event (per create for creates, per request for the ceiling) while the 10 s load of each section ran', cpu, {
      significantDigits: 3,
    });
  }
  if (want('counts')) {
    // One table a phase, as fanout's; results.counts keeps every row, with its phase.
    results.counts = await benchCounts(process.env.NOTIFICATIONS_BENCH_DATABASE_URL);
    printPhases(results.counts, COUNTS_TABLES);
  }
  await section(
    'wal',
    `SQLite's log by table and index: the counts workload for ${WAL_SECONDS} s (no checkpoint meanwhile), drained; each page a commit changed is written whole`,
    benchWalPages,
  );
  await section('latency', 'From receive to delivered at a fixed 1,000 events/s for 10 s (3 policy calls and 3 deliveries each)', () =>
    forEachBenchDatabase(benchLatency),
  );
  await section('sustained', 'Deliveries sustained for a minute at 2,000 events/s offered (6,000 deliveries/s)', () =>
    forEachBenchDatabase(benchSustained),
  );
  await section(
    'isolation',
    'Isolation: receive to delivered at a healthy target, 500 events/s for 10 s, alone and beside a target that never answers',
    () => forEachBenchDatabase(benchIsolation),
  );
  await section(
    'tracing',
    'Tracing off and on: the receive workload at 300 events/s for 10 s (2,100 spans/s when on), spans exported over OTLP/HTTP to a receiver that discards them; of three runs each, the least disturbed',
    () => benchTracing(forEachBenchDatabase),
  );
  await section(
    'brokers',
    'Brokers: deliveries/s to RabbitMQ (publisher confirms, persistent, a durable queue), Mosquitto (MQTT 5, QoS 1), NATS JetStream (acknowledged by a file stream) and Redis Streams (XADD) beside HTTP, 20 subscriptions to every event, 300 events/s offered for 10 s (6,000 deliveries/s)',
    () => forEachBenchDatabase(benchBrokers),
  );
  await section(
    'disk',
    `Disk: bytes the database keeps per event (the facility's example event, ${DISK_MATCHES_PER_EVENT} matches each, delivered at the first try: ` +
      `${DISK_EVENTS.toLocaleString('en-US')} events), per match (with its attempt), per extra attempt ` +
      `(${DISK_RETRIED_EVENTS.toLocaleString('en-US')} more events, each delivery answered 500 ${FAILURES_BEFORE_DELIVERY} times first)`,
    () => forEachBenchDatabase(benchDisk),
  );
  await section(
    'import',
    `import-pacifica: an original's PostgreSQL database (${IMPORT_EVENTS.toLocaleString('en-US')} events of 2 KB, 1.6 matches each, 200 subscriptions) into a fresh database; then a second run, which finds everything present`,
    benchImportSection,
  );
  if (want('fanout')) {
    // One table a phase (their columns differ); results.fanout keeps every row, with its phase.
    results.fanout = await forEachBenchDatabase(benchFanout);
    printPhases(results.fanout, FANOUT_TABLES);
  }
  results.goals = goals(results, Boolean(process.env.NOTIFICATIONS_BENCH_DATABASE_URL));
  printTable('Goals, with the figures of this run', results.goals);
  writeFileSync(
    new URL('../../bench/results.json', import.meta.url),
    JSON.stringify({ date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, results }, null, 2),
  );
}

/** A table for each phase of `rows`, without the phase column. */
function printPhases(rows: Row[], tables: ReadonlyArray<readonly [string, string]>): void {
  for (const [phase, title] of tables)
    printTable(
      title,
      rows.filter((row) => row.phase === phase).map(({ phase: _phase, ...row }) => row),
    );
}

/** The import reads an original on PostgreSQL: without NOTIFICATIONS_BENCH_DATABASE_URL there is none to read. */
async function benchImportSection(): Promise<Row[]> {
  const base = process.env.NOTIFICATIONS_BENCH_DATABASE_URL;
  if (!base) return [{ into: 'not measured: the original is made on PostgreSQL (NOTIFICATIONS_BENCH_DATABASE_URL)' }];
  const original = await originalForBench(base);
  try {
    return await forEachBenchDatabase((label, url) => benchImport(original, label, url));
  } finally {
    await original.cleanup();
  }
}

/** A fresh SQLite database, and a fresh PostgreSQL schema when NOTIFICATIONS_BENCH_DATABASE_URL names a database. */
async function forEachBenchDatabase(bench: (label: string, url: string) => Promise<Row | Row[]>): Promise<Row[]> {
  const rows: Row[] = [];
  const sqlite = await createSqlite();
  try {
    rows.push(...[await bench('sqlite', sqlite.url)].flat());
  } finally {
    await sqlite.cleanup();
  }
  const base = process.env.NOTIFICATIONS_BENCH_DATABASE_URL;
  if (base) {
    const postgres = await createPostgres(base);
    try {
      rows.push(...[await bench('postgres', postgres.url)].flat());
    } finally {
      await postgres.cleanup();
    }
  }
  return rows;
}

await main();
