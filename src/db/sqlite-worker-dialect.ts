/**
 * A Kysely dialect for SQLite whose one connection lives in a worker thread (sqlite-worker.ts):
 * Kysely's own SQLite compiler and adapter, with a driver that sends each statement across.
 * Like Kysely's SqliteDriver, callers take turns on the connection, so a transaction is
 * never interleaved with another caller's statements.
 */
import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from 'kysely';
import type { Answer, Request, WorkerOptions } from './sqlite-worker.js';

export class WorkerSqliteDialect implements Dialect {
  constructor(private readonly options: WorkerOptions) {}
  createDriver(): Driver {
    return new WorkerSqliteDriver(this.options);
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  createAdapter() {
    return new SqliteAdapter();
  }
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}

/** An error the database raised, with SQLite's code (e.g. SQLITE_CONSTRAINT_UNIQUE). */
export class SqliteError extends Error {
  constructor(message: string, readonly code?: string) {
    super(message);
    this.name = 'SqliteError';
  }
}

class WorkerSqliteDriver implements Driver {
  private worker!: Worker;
  private readonly waiting = new Map<number, (answer: Answer) => void>();
  private nextId = 0;
  private stopped: Error | undefined;
  private inUse = false;
  private readonly queue: Array<() => void> = [];
  private readonly connection: DatabaseConnection;

  constructor(private readonly options: WorkerOptions) {
    this.connection = {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        const answer = await this.send({ sql: query.sql, parameters: query.parameters });
        if ('error' in answer) throw new SqliteError(answer.error.message, answer.error.code);
        if ('rows' in answer) return { rows: answer.rows as R[] };
        if ('changes' in answer) return { rows: [], numAffectedRows: BigInt(answer.changes), insertId: BigInt(answer.lastInsertRowid) };
        throw new Error('the SQLite worker answered a statement with "closed"');
      },
      streamQuery: () => {
        throw new Error('streaming is not supported by the SQLite worker dialect');
      },
    };
  }

  // Kysely calls this before the first query, and destroy() only if it did: a worker started
  // earlier would outlive a handle that was never used, and keep the process alive.
  async init(): Promise<void> {
    // The parent's node options (e.g. --input-type) need not suit a worker's file; a CPU
    // profile is asked of the worker too.
    const execArgv = process.execArgv.filter((option) => option.startsWith('--cpu-prof'));
    this.worker = new Worker(new URL('./sqlite-worker.js', import.meta.url), { workerData: this.options, execArgv });
    this.worker.on('message', (answer: Answer) => {
      const settle = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      settle?.(answer);
    });
    this.worker.on('error', (error) => this.stop(error));
    this.worker.on('exit', (code) => this.stop(new Error(`the SQLite worker stopped (exit code ${code})`)));
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.inUse) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.inUse = true;
    return this.connection;
  }

  async releaseConnection(): Promise<void> {
    const next = this.queue.shift();
    if (next) next(); // the connection passes straight to the next caller
    else this.inUse = false;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async destroy(): Promise<void> {
    if (this.stopped) return;
    const exited = new Promise((resolve) => this.worker.once('exit', resolve));
    await this.send({ close: true });
    await exited;
  }

  private send(request: { sql: string; parameters: readonly unknown[] } | { close: true }): Promise<Answer> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.worker.postMessage({ id, ...request } satisfies Request);
    });
  }

  private stop(reason: Error): void {
    this.stopped ??= reason;
    for (const settle of this.waiting.values()) settle({ id: -1, error: { message: reason.message } });
    this.waiting.clear();
  }
}
