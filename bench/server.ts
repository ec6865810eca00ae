/** The service as the benchmarks run it: its own database, schema synced, logging warnings only. */
import { runCli, startServer, type RunningServer } from '../test/support/processes.js';

export async function startBenchServer(databaseUrl: string): Promise<RunningServer> {
  const sync = await runCli(['--database-url', databaseUrl, 'dbsync']);
  if (sync.code !== 0) throw new Error(`dbsync failed: ${sync.stderr}`);
  return startServer({ NOTIFICATIONS_DATABASE_URL: databaseUrl, NOTIFICATIONS_LOG_LEVEL: 'warn' });
}
