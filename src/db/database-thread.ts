/**
 * A database connection owned by a worker thread (sqlite-worker.ts, postgres-worker.ts): the
 * main thread sends the named operations (operations.ts) and awaits their answers, and the
 * worker builds their statements, runs them in a group commit of its own and reads the
 * answers, on another core. The operations of one turn of the event loop go in one message,
 * as do the answers of one turn of the worker's.
 *
 * Starting is synchronous, like opening better-sqlite3 or a pg pool: the main thread waits
 * (Atomics.wait) until the worker has opened its connection, and a failure (no such file,
 * locked, not a database, a driver that cannot load) is thrown to the caller. A worker that
 * fails later (a bug: the database's own errors are answers) fails every operation waiting and
 * every one after.
 */
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { batchPerTurn } from '../turn-batch.js';
import type { WriteOptions } from './group-commit.js';
import type { OperationArgs, OperationName, OperationResult } from './operations.js';
import { DatabaseUnavailable } from './unavailable.js';

export type ThreadRequest =
  | { kind: 'query'; id: number; sql: string; parameters: readonly unknown[] }
  /** One of the named operations, in the thread's group commit. */
  | { kind: 'perform'; id: number; name: OperationName; args: unknown; options?: WriteOptions }
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
/** Told unasked, among the answers: a pooled connection failed while nothing used it (it is replaced). */
export interface ConnectionFailed {
  connectionError: ThreadError;
}

/** What a worker is given: its own settings, the port it answers on, and the cell it says it opened in. */
export interface ThreadData<O> {
  options: O;
  port: MessagePort;
  opened: Int32Array;
}

/** The database's error as the worker reported it: `code` is SQLite's (SQLITE_BUSY, SQLITE_FULL, …) or PostgreSQL's SQLSTATE. */
export class DatabaseError extends Error {
  override readonly name = 'DatabaseError';
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** An error as it crosses from the worker: what the main thread's checks look at (isDatabaseUnavailable, isStorageFull). */
export function describeError(error: unknown): ThreadError {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { message: error.message, name: error.name, ...(typeof code === 'string' ? { code } : {}) };
}

export function toError(error: ThreadError): Error {
  if (error.name === 'DatabaseUnavailable') return new DatabaseUnavailable(error.message);
  return error.code === undefined ? new Error(error.message) : new DatabaseError(error.message, error.code);
}

/** Opening waits for the drivers' own time-outs, which are shorter: beyond this the thread is stuck. */
const OPEN_LIMIT_MS = 60_000;

/** Starts `script` with `options` and waits until it has opened its connection: throws what opening threw. */
export function startThread<O>(script: URL, options: O): { worker: Worker; port: MessagePort } {
  const { port1, port2 } = new MessageChannel();
  const opened = new Int32Array(new SharedArrayBuffer(4));
  const workerData: ThreadData<O> = { options, port: port2, opened };
  const worker = new Worker(script, { workerData, transferList: [port2] });
  // The worker stores 1 once it has posted how opening went, whatever happened.
  Atomics.wait(opened, 0, 0, OPEN_LIMIT_MS);
  const answer = receiveMessageOnPort(port1)?.message as OpenAnswer | undefined;
  if (!answer?.ok) {
    void worker.terminate();
    port1.close();
    throw answer ? toError(answer.error) : new Error('the database thread ended before opening the database');
  }
  return { worker, port: port1 };
}

/** The worker side: says how opening went, through the port and the shared cell the main thread waits on. */
export function reportOpened({ port, opened }: ThreadData<unknown>, answer: OpenAnswer): void {
  port.postMessage(answer);
  Atomics.store(opened, 0, 1);
  Atomics.notify(opened, 0);
}

export class DatabaseThread {
  private readonly waiting = new Map<number, { resolve: (answer: ThreadAnswer) => void; reject: (error: Error) => void }>();
  /** Operations are sent together, a message for those of one turn of the event loop. */
  private readonly sendOperation = batchPerTurn<ThreadRequest>((requests) => this.port.postMessage(requests));
  private nextId = 0;
  private failure: Error | undefined;
  private closed: Promise<void> | undefined;

  /** `name`: what the thread is, in the error that ends it. `onFailure`: the thread failed or ended unasked; told once. */
  constructor(
    name: string,
    private readonly worker: Worker,
    private readonly port: MessagePort,
    private readonly onFailure: ((error: Error) => void) | undefined,
    onConnectionError?: (error: Error) => void,
  ) {
    port.on('message', (answers: Array<ThreadAnswer | ConnectionFailed>) => {
      for (const answer of answers) {
        if ('connectionError' in answer) onConnectionError?.(toError(answer.connectionError));
        else this.answered(answer);
      }
    });
    // Neither keeps the process alive while nothing waits (see `send`).
    port.unref();
    worker.unref();
    worker.on('error', (error) => this.fail(new Error(`the ${name} failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => this.fail(new Error(`the ${name} exited with ${code}`)));
  }

  /** Runs operation `name` in the thread's group commit: settles once it is committed (and synced). */
  perform<N extends OperationName>(name: N, args: OperationArgs<N>, options?: WriteOptions): Promise<OperationResult<N>> {
    return this.send({ kind: 'perform', id: 0, name, args, ...(options ? { options } : {}) }).then((answer) => {
      if ('error' in answer) throw toError(answer.error);
      return (answer as { value: OperationResult<N> }).value;
    });
  }

  /** Closes the connection (after what was already sent) and ends the thread. */
  close(): Promise<void> {
    this.closed ??= this.send({ kind: 'close', id: 0 })
      .catch(() => undefined)
      .then(() => this.worker.terminate())
      .then(() => undefined);
    return this.closed;
  }

  protected send(request: ThreadRequest): Promise<ThreadAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new Error('the database is closed'));
    const id = this.nextId++;
    return new Promise<ThreadAnswer>((resolve, reject) => {
      // The process stays alive while an answer is awaited (a CLI awaiting its last statement).
      if (this.waiting.size === 0) this.port.ref();
      this.waiting.set(id, { resolve, reject });
      if (request.kind === 'perform') this.sendOperation({ ...request, id });
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
