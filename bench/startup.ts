/**
 * Start-up with 1,000,000 facility-shaped subscriptions (as bench/memory.ts writes them): from
 * spawning `node dist/src/main.js` until GET /readyz answers 200, twice on the same database
 * (instances restart on every deploy). With BENCH_CPU_PROF=<dir> each start writes a V8 CPU
 * profile there when the server stops.
 */
import { Random } from '../test/support/random.js';
import { startServer } from '../test/support/processes.js';
import { addSubscriptionRows, facilityRows } from './memory.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

export const STARTUP_SUBSCRIPTIONS = 1_000_000;
const STARTUP_RUNS = 2;
const START_TIMEOUT_MS = 600_000;

export async function benchStartup(label: string, databaseUrl: string): Promise<Row[]> {
  const sync = await startBenchServer(databaseUrl); // syncs the schema
  await sync.stop();
  await addSubscriptionRows(databaseUrl, facilityRows(new Random(STARTUP_SUBSCRIPTIONS)), STARTUP_SUBSCRIPTIONS);
  const rows: Row[] = [];
  for (let run = 1; run <= STARTUP_RUNS; run++) {
    rows.push({ database: label, subscriptions: STARTUP_SUBSCRIPTIONS, run, 'to ready s': await secondsToReady(databaseUrl) });
  }
  return rows;
}

/** Seconds from spawning the server on `databaseUrl` until its /readyz answers 200 "ready". */
export async function secondsToReady(databaseUrl: string): Promise<number> {
  const profileDir = process.env.BENCH_CPU_PROF;
  const started = performance.now();
  const server = await startServer(
    { NOTIFICATIONS_DATABASE_URL: databaseUrl, NOTIFICATIONS_LOG_LEVEL: 'warn' },
    { timeoutMs: START_TIMEOUT_MS, nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [] },
  );
  try {
    for (;;) {
      const answer = await fetch(`${server.url}/readyz`);
      const body = (await answer.json()) as { status?: string };
      if (answer.status === 200 && body.status === 'ready') return (performance.now() - started) / 1000;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await server.stop();
  }
}
