/**
 * SQLite's connection in a worker thread of its own (sqlite-worker.ts, database-thread.ts).
 * better-sqlite3 runs every statement in the thread that calls it: on the main thread, SQLite's
 * work (inserting the events and their matches, claims, settlements, BEGIN and COMMIT) was 40%
 * of the event loop's time under load, time in which no request was read or answered. Here the
 * main thread sends the operations, and each statement of its own (through Kysely, see
 * sqlite-thread-dialect.ts), and awaits their answers.
 */
import { DatabaseThread, startThread, type ThreadAnswer, toError } from './database-thread.js';

export interface SqliteThreadOptions {
  readonly path: string;
  /** How long SQLite itself waits for a lock another connection holds. */
  readonly busyTimeoutMs: number;
  readonly fileMustExist: boolean;
  /** How long opening, or a transaction's BEGIN, may wait for a lock another process holds. */
  readonly timeoutMs: number;
  /** The write-ahead log the group commit syncs before answering; none for `:memory:`. */
  readonly walPath?: string;
  /** Set on the connection once it is open, in order. */
  readonly pragmas: readonly string[];
  /** The thread failed or ended unasked; told once. Not sent to the thread. */
  readonly onFailure?: ((error: Error) => void) | undefined;
}

export interface StatementResult {
  /** The rows of a statement that returns rows. */
  readonly rows?: unknown[];
  /** The rows changed by one that does not. */
  readonly changes?: number;
}

export class SqliteThread extends DatabaseThread {
  /** Starts the thread and waits until the database is open: throws what opening it threw. */
  static open({ onFailure, ...options }: SqliteThreadOptions): SqliteThread {
    const { worker, port } = startThread(new URL('./sqlite-worker.js', import.meta.url), options);
    return new SqliteThread('SQLite thread', worker, port, onFailure);
  }

  query(sql: string, parameters: readonly unknown[]): Promise<StatementResult> {
    return this.send({ kind: 'query', id: 0, sql, parameters }).then(resultOf);
  }

  /** Rolls back the transaction open on the connection, if one is. */
  async rollback(): Promise<void> {
    resultOf(await this.send({ kind: 'rollback', id: 0 }));
  }

  /** Copies the database into the new file `file`, as it stood at one moment (SQLite's online backup). */
  async backup(file: string): Promise<void> {
    resultOf(await this.send({ kind: 'backup', id: 0, file }));
  }
}

function resultOf(answer: ThreadAnswer): StatementResult {
  if ('error' in answer) throw toError(answer.error);
  return answer as StatementResult;
}
