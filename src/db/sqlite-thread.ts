/**
 * SQLite's connection in a worker thread of its own (sqlite-worker.ts). better-sqlite3 runs
 * every statement in the thread that calls it: on the main thread, SQLite's work (inserting the
 * events and their matches, claims, settlements, BEGIN and COMMIT) was 40% of the event loop's
 * time under load, time in which no request was read or answered. Here the main thread sends
 * each statement and awaits its answer, and the worker, on the machine's other core, runs it.
 *
 * Opening is synchronous, as with better-sqlite3 itself: the main thread waits (Atomics.wait)
 * until the worker has opened the file, and a failure (no such file, locked, not a database)
 * is thrown to the caller of `open`. A worker that fails later (a bug; SQLite's own errors are
 * answers) fails every statement waiting and every one after.
 */
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { batchPerTurn } from '../turn-batch.js';
import type { OperationArgs, OperationName, OperationResult } from './operations.js';
import { DatabaseUnavailable } from './unavailable.js';

export interface SqliteThreadOptions {
  readonly path: string;
  /** How long SQLite itself waits for a lock another connection holds. */
  readonly busyTimeoutMs: number;
  readonly fileMustExist: boolean;
  /** How long opening, or a transaction's BEGIN, may wait for a lock another process holds. */
  readonly timeoutMs: number;
  /** The write-ahead log the group commit syncs before answering; none for `:memory:`. */
  readonly walPath?: string;
  /** The page size a new file is made with; a file made earlier keeps its own. */
  readonly newFilePageSize: number;
  /** SQLite checkpoints its log when it holds this much, whatever the file's page size. */
  readonly walCheckpointBytes: number;
  /** Set on the connection once it is open, in order. */
  readonly pragmas: readonly string[];
  /** The thread failed or ended unasked; told once. Not sent to the thread. */
  readonly onFailure?: ((error: Error) => void) | undefined;
}

export type ThreadRequest =
  | { kind: 'query'; id: number; sql: string; parameters: readonly unknown[] }
  /** One of the named operations, in the thread's group commit. */
  | { kind: 'perform'; id: number; name: OperationName; args: unknown; syncLater: boolean }
  /** ROLLBACK, when a transaction is still open. */
  | { kind: 'rollback'; id: number }
  | { kind: 'backup'; id: number; file: string }
  | { kind: 'close'; id: number };

export interface ThreadError {
  message: string;
  name?: string;
  code?: string;
}
export type ThreadAnswer =
  { id: number; rows: unknown[] } | { id: number; changes: number } | { id: number; value: unknown } | { id: number; error: ThreadError };
export type OpenAnswer = { ok: true } | { ok: false; error: ThreadError };

export interface StatementResult {
  /** The rows of a statement that returns rows. */
  readonly rows?: unknown[];
  /** The rows changed by one that does not. */
  readonly changes?: number;
}

/** SQLite's error, as the worker reported it: `code` is SQLite's (SQLITE_BUSY, SQLITE_FULL, …). */
export class SqliteError extends Error {
  override readonly name = 'SqliteError';
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** Opening waits for SQLite's own lock time-outs, which are shorter: beyond this the thread is stuck. */
const OPEN_LIMIT_MS = 60_000;

export class SqliteThread {
  private readonly waiting = new Map<number, { resolve: (answer: ThreadAnswer) => void; reject: (error: Error) => void }>();
  /** Operations are sent together, a message for those of one turn of the event loop; their buffers are moved, not copied. */
  private readonly sendOperation = batchPerTurn<{ request: ThreadRequest; transfer: ArrayBuffer[] }>((operations) =>
    this.port.postMessage(
      operations.map((o) => o.request),
      operations.flatMap((o) => o.transfer),
    ),
  );
  private nextId = 0;
  private failure: Error | undefined;
  private closed: Promise<void> | undefined;

  private constructor(
    private readonly worker: Worker,
    private readonly port: MessagePort,
    private readonly onFailure: ((error: Error) => void) | undefined,
  ) {
    port.on('message', (answers: ThreadAnswer[]) => {
      for (const answer of answers) this.answered(answer);
    });
    // Neither keeps the process alive while no statement waits (see `send`).
    port.unref();
    worker.unref();
    worker.on('error', (error) => this.fail(new Error(`the SQLite thread failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => this.fail(new Error(`the SQLite thread exited with ${code}`)));
  }

  /** Starts the thread and waits until the database is open: throws what opening it threw. */
  static open({ onFailure, ...options }: SqliteThreadOptions): SqliteThread {
    const { port1, port2 } = new MessageChannel();
    const opened = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(new URL('./sqlite-worker.js', import.meta.url), {
      workerData: { options, port: port2, opened },
      transferList: [port2],
    });
    // The worker stores 1 once it has posted how opening went, whatever happened.
    Atomics.wait(opened, 0, 0, OPEN_LIMIT_MS);
    const answer = receiveMessageOnPort(port1)?.message as OpenAnswer | undefined;
    if (!answer?.ok) {
      void worker.terminate();
      port1.close();
      throw answer ? toError(answer.error) : new Error('the SQLite thread ended before opening the database');
    }
    return new SqliteThread(worker, port1, onFailure);
  }

  query(sql: string, parameters: readonly unknown[]): Promise<StatementResult> {
    return this.send({ kind: 'query', id: 0, sql, parameters }).then(resultOf);
  }

  /**
   * Runs operation `name` in the thread's group commit: settles once it is committed and synced
   * (with `syncLater`, once committed: WriteOptions).
   * The buffers in `transfer` move to the thread: they are empty here afterwards.
   */
  perform<N extends OperationName>(
    name: N,
    args: OperationArgs<N>,
    syncLater: boolean,
    transfer: ArrayBuffer[] = [],
  ): Promise<OperationResult<N>> {
    return this.send({ kind: 'perform', id: 0, name, args, syncLater }, transfer).then((answer) => {
      if ('error' in answer) throw toError(answer.error);
      return (answer as { value: OperationResult<N> }).value;
    });
  }

  /** Rolls back the transaction open on the connection, if one is. */
  async rollback(): Promise<void> {
    resultOf(await this.send({ kind: 'rollback', id: 0 }));
  }

  /** Copies the database into the new file `file`, as it stood at one moment (SQLite's online backup). */
  async backup(file: string): Promise<void> {
    resultOf(await this.send({ kind: 'backup', id: 0, file }));
  }

  /** Closes the connection (after the statements already sent) and ends the thread. */
  close(): Promise<void> {
    this.closed ??= this.send({ kind: 'close', id: 0 })
      .catch(() => undefined)
      .then(() => this.worker.terminate())
      .then(() => undefined);
    return this.closed;
  }

  private send(request: ThreadRequest, transfer: ArrayBuffer[] = []): Promise<ThreadAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new Error('the database is closed'));
    const id = this.nextId++;
    return new Promise<ThreadAnswer>((resolve, reject) => {
      // The process stays alive while an answer is awaited (a CLI awaiting its last statement).
      if (this.waiting.size === 0) this.port.ref();
      this.waiting.set(id, { resolve, reject });
      if (request.kind === 'perform') this.sendOperation({ request: { ...request, id }, transfer });
      else this.port.postMessage([{ ...request, id }]);
    });
  }

  private answered(answer: ThreadAnswer): void {
    const waiter = this.waiting.get(answer.id);
    if (!waiter) return;
    this.waiting.delete(answer.id);
    if (this.waiting.size === 0) this.port.unref();
    waiter.resolve(answer);
  }

  private fail(error: Error): void {
    if (this.closed && this.waiting.size === 0) return;
    if (this.failure === undefined) this.onFailure?.(error);
    this.failure ??= error;
    for (const waiter of this.waiting.values()) waiter.reject(this.failure);
    this.waiting.clear();
    this.port.unref();
  }
}

function resultOf(answer: ThreadAnswer): StatementResult {
  if ('error' in answer) throw toError(answer.error);
  return answer as StatementResult;
}

function toError(error: ThreadError): Error {
  if (error.name === 'DatabaseUnavailable') return new DatabaseUnavailable(error.message);
  return error.code === undefined ? new Error(error.message) : new SqliteError(error.message, error.code);
}
