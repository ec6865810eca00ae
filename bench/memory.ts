/**
 * The server process with 100,000 and then 1,000,000 facility-shaped subscriptions loaded: rows
 * as POST /eventmatch writes them are inserted straight into the table, a thousand a statement
 * (a million creates through the service would take minutes), then the server starts on that
 * database. Start-up is from spawning the process until it answers /healthz, which it does once
 * every subscription is loaded; resident memory and heap are read from its /metrics then, and
 * the most it was resident at any time (Linux's VmHWM) from /proc.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { type DatabaseHandle, openDatabase } from '../src/db/connect.js';
import { SUBSCRIPTION_ROWS_PER_STATEMENT } from '../src/db/stores/subscriptions.js';
import type { SubscriptionRow } from '../src/db/tables.js';
import { compileJsonPath, type Dialect } from '../src/jsonpath/index.js';
import { RECORD_VERSION } from '../src/subscriptions/record.js';
import { generateSigningSecret } from '../src/subscriptions/signing-secret.js';
import { systemClock } from '../src/time/clock.js';
import { Random } from '../test/support/random.js';
import { startServer } from '../test/support/processes.js';
import { subscriptionRow } from '../test/support/subscription-row.js';
import { subscriptionExpression } from './facility-workload.js';
import { MB } from './measure.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

/** Each size adds to the rows of the one before. */
const MEMORY_SIZES = [100_000, 1_000_000];
const OWNERS = 5_000;
/** Statements a transaction: fewer commits, and SQLite's log stays small. */
const STATEMENTS_PER_TRANSACTION = 20;
/** Loading 1,000,000 took ~25 s on the reference machine; far more when it is shared. */
const START_TIMEOUT_MS = 600_000;

export async function benchMemory(label: string, databaseUrl: string): Promise<Row[]> {
  const sync = await startBenchServer(databaseUrl); // syncs the schema; started again below on the rows
  await sync.stop();
  const rows: Row[] = [];
  const r = new Random(MEMORY_SIZES.at(-1)!);
  const writer = facilityRows(r);
  let written = 0;
  for (const size of MEMORY_SIZES) {
    const database = openDatabase(databaseUrl);
    try {
      await insertRows(database, writer, size - written);
      // As autovacuum soon would, where it runs: without statistics on a table just loaded,
      // PostgreSQL read each page of the start-up load by sorting every live row (0.7 s a page,
      // 2 minutes for 1,000,000 rows) rather than along the primary key. SQLite is left as is.
      if (databaseUrl.startsWith('postgres')) await sql`analyze subscriptions`.execute(database.db);
    } finally {
      await database.close();
    }
    written = size;
    rows.push({ database: label, subscriptions: size, ...(await measureLoaded(databaseUrl)) });
  }
  return rows;
}

async function measureLoaded(databaseUrl: string): Promise<Row> {
  const started = performance.now();
  const server = await startServer(
    { NOTIFICATIONS_DATABASE_URL: databaseUrl, NOTIFICATIONS_LOG_LEVEL: 'warn' },
    { timeoutMs: START_TIMEOUT_MS },
  );
  const startMs = performance.now() - started;
  try {
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
    return {
      'start-up s': startMs / 1000,
      'resident MB': read('process_resident_memory_bytes') / MB,
      'peak resident MB': peakResidentBytes(server.process.pid!) / MB,
      'heap used MB': read('nodejs_heap_size_used_bytes') / MB,
    };
  } finally {
    await server.stop();
  }
}

/** The most the process has been resident (VmHWM); NaN where /proc does not say. */
function peakResidentBytes(pid: number): number {
  try {
    const kB = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kB === undefined ? NaN : Number(kB) * 1024;
  } catch {
    return NaN;
  }
}

export async function insertRows(database: DatabaseHandle, next: () => SubscriptionRow, count: number): Promise<void> {
  const perTransaction = SUBSCRIPTION_ROWS_PER_STATEMENT * STATEMENTS_PER_TRANSACTION;
  for (let done = 0; done < count; done += perTransaction) {
    await database.db.transaction().execute(async (tx) => {
      for (let start = done; start < Math.min(count, done + perTransaction); start += SUBSCRIPTION_ROWS_PER_STATEMENT) {
        const rows = Array.from({ length: Math.min(SUBSCRIPTION_ROWS_PER_STATEMENT, count - start) }, next);
        await tx.insertInto('subscriptions').values(rows).execute();
      }
    });
  }
}

/** The rows POST /eventmatch would write for the facility's subscriptions, one a call. */
export function facilityRows(r: Random): () => SubscriptionRow {
  // The dialect each expression compiles in, as a create finds it (about 150,000 distinct at 1,000,000).
  const dialects = new Map<string, Dialect>();
  const clock = systemClock();
  let i = 0;
  return () => {
    const jsonpath = subscriptionExpression(r);
    let dialect = dialects.get(jsonpath);
    if (dialect === undefined) dialects.set(jsonpath, (dialect = compileJsonPath(jsonpath).dialect));
    const now = clock();
    const n = i++;
    return subscriptionRow({
      owner: `user-${n % OWNERS}`,
      name: `subscription ${n}`,
      jsonpath,
      dialect,
      target_url: 'http://127.0.0.1:9/hook',
      signing_secret: generateSigningSecret(),
      version: RECORD_VERSION,
      created: now,
      updated: now,
    });
  };
}
