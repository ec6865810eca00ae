/**
 * `npm run bench`: prints the benchmark tables and writes bench/results.json.
 * Run with --expose-gc (the npm script does) so the memory figures are settled heaps.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { benchCreates } from './creates.js';
import { benchEvaluation } from './jsonpath-evaluation.js';
import { benchReceive } from './receive.js';
import { createPostgres, createSqlite } from '../test/support/database.js';
import { facilityEvent } from '../test/support/shared.js';
import { benchMatching } from './subscription-matching.js';
import { printTable, type Row } from './table.js';


async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const want = (section: string) => only.length === 0 || only.includes(section);
  const results: Record<string, Row[]> = {};

  console.log(`svc-notifications benchmark: node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}`);
  if (want('jsonpath')) {
    results['jsonpath'] = benchEvaluation(facilityEvent());
    printTable('JSONPath: evaluations per second of one compiled expression (facility event, 2 KB)', results['jsonpath']);
  }
  if (want('matching')) {
    results['matching'] = benchMatching([1_000, 10_000, 100_000]);
    printTable('Matching: one event against all subscriptions (facility-shaped, 2.5% evaluated for every event)', results['matching']);
  }
  if (want('creates')) {
    results['creates'] = await forEachBenchDatabase(benchCreates);
    printTable('POST /eventmatch against the server process (autocannon, 32 connections, 10 s)', results['creates']);
  }
  if (want('receive')) {
    results['receive'] = await forEachBenchDatabase(benchReceive);
    printTable('POST /receive, 1,000 subscriptions, 3 matching each event (autocannon, 32 connections, 10 s), then delivery end to end', results['receive']);
  }
  writeFileSync(new URL('../../bench/results.json', import.meta.url), JSON.stringify({ date: new Date().toISOString(), node: process.version, results }, null, 2));
}

/** A fresh SQLite database, and a fresh PostgreSQL schema when NOTIFICATIONS_BENCH_DATABASE_URL names a database. */
async function forEachBenchDatabase(bench: (label: string, url: string) => Promise<Row>): Promise<Row[]> {
  const sqlite = await createSqlite();
  const databases = [{ label: 'sqlite', url: sqlite.url }];
  const base = process.env['NOTIFICATIONS_BENCH_DATABASE_URL'];
  const postgres = base ? await createPostgres(base) : undefined;
  if (postgres) databases.push({ label: 'postgres', url: postgres.url });
  else console.log('\n(PostgreSQL too: set NOTIFICATIONS_BENCH_DATABASE_URL=postgres://…)');
  try {
    const rows: Row[] = [];
    for (const { label, url } of databases) rows.push(await bench(label, url));
    return rows;
  } finally {
    await sqlite.cleanup();
    await postgres?.cleanup();
  }
}

await main();
