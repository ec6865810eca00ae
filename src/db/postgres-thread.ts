/**
 * The operations (operations.ts) on PostgreSQL in a worker thread of its own, with a pool of
 * its own (postgres-worker.ts): the main thread no longer builds their statements, writes them
 * to the sockets or parses the answers. Under load that was half of the main thread's time for
 * a create on PostgreSQL (Kysely compiling, pg's protocol, and a socket write per statement).
 */
import { DatabaseThread, startThread } from './database-thread.js';
import type { PostgresPoolSettings } from './postgres-pool.js';

export function openPostgresThread(
  settings: PostgresPoolSettings,
  onFailure: ((error: Error) => void) | undefined,
  onConnectionError: ((error: Error) => void) | undefined,
): DatabaseThread {
  const { worker, port } = startThread(new URL('./postgres-worker.js', import.meta.url), settings);
  return new DatabaseThread('PostgreSQL thread', worker, port, onFailure, onConnectionError);
}
