/**
 * The SQLite connection, in a worker thread of its own: better-sqlite3 is synchronous, and a
 * commit waits for fsync, so on the main thread every statement and every commit stopped the
 * event loop (half of the server's time under the receive benchmark). Here they run beside
 * it. Each message is one statement; the answer carries its rows or its error.
 */
import SQLite from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { withStatementCache } from './sqlite-statement-cache.js';

export interface WorkerOptions {
  path: string;
  busyTimeoutMs: number;
}

export type Request = { id: number; sql: string; parameters: readonly unknown[] } | { id: number; close: true };

export type Answer =
  | { id: number; rows: unknown[] }
  | { id: number; changes: number | bigint; lastInsertRowid: number | bigint }
  | { id: number; error: { message: string; code?: string } }
  | { id: number; closed: true };

const { path, busyTimeoutMs } = workerData as WorkerOptions;
const database = new SQLite(path, { timeout: busyTimeoutMs });
database.pragma('journal_mode = WAL');
// FULL: a commit is on disk before /receive answers, even across a power cut.
database.pragma('synchronous = FULL');
database.pragma('foreign_keys = ON');
const statements = withStatementCache(database);
const port = parentPort!;

port.on('message', (request: Request) => {
  if ('close' in request) {
    database.close();
    port.postMessage({ id: request.id, closed: true } satisfies Answer);
    port.close();
    return;
  }
  port.postMessage(execute(request.id, request.sql, request.parameters));
});

function execute(id: number, sql: string, parameters: readonly unknown[]): Answer {
  try {
    const statement = statements.prepare(sql);
    if (statement.reader) return { id, rows: statement.all(parameters) };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { id, changes, lastInsertRowid };
  } catch (error) {
    const { message, code } = error as { message: string; code?: unknown };
    return { id, error: typeof code === 'string' ? { message, code } : { message } };
  }
}
