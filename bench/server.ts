/**
 * The service as the benchmarks run it: its own database, schema synced, logging warnings only.
 * With BENCH_CPU_PROF=<dir> the server process writes a V8 CPU profile there when it stops
 * (open it in Chrome DevTools or speedscope).
 */
import { type RunningServer, runCli, startServer } from '../test/support/processes.js';

export async function startBenchServer(databaseUrl: string, env: Record<string, string> = {}): Promise<RunningServer> {
  const sync = await runCli(['--database-url', databaseUrl, 'dbsync']);
  if (sync.code !== 0) throw new Error(`dbsync failed: ${sync.stderr}`);
  const profileDir = process.env.BENCH_CPU_PROF;
  return startServer(
    { NOTIFICATIONS_DATABASE_URL: databaseUrl, NOTIFICATIONS_LOG_LEVEL: 'warn', ...env },
    // Loading 100,000 subscriptions takes a while.
    { timeoutMs: 120_000, nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [] },
  );
}
