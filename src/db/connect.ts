/**
 * Opens the database a URL names: `sqlite:<path>` (embedded, one instance) or `postgres://…`
 * (several instances). What differs between them is declared once, as capabilities.
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { within } from '../time/within.js';
import { maskUrlPassword } from '../url-password.js';
import { type Capabilities, POSTGRES_CAPABILITIES, SQLITE_CAPABILITIES } from './capabilities.js';
import { GroupCommit, type WriteOptions } from './group-commit.js';
import { beginWithFirstStatement } from './postgres-round-trip.js';
import { type OperationArgs, type OperationName, type OperationResult, runOperation, transfersOf } from './operations.js';
import { postgresTarget } from './postgres-target.js';
import { SqliteThread } from './sqlite-thread.js';
import { SqliteThreadDialect } from './sqlite-thread-dialect.js';
import { immediateTransaction, SQLITE_BUSY_SLICE_MS } from './sqlite-transaction.js';
import { StorageWatch, writeSpaceProbe } from './storage-full.js';
import type { Database } from './tables.js';
import { DatabaseUnavailable } from './unavailable.js';
import { WalSync } from './wal-sync.js';

export type { Capabilities } from './capabilities.js';

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly capabilities: Capabilities;
  /**
   * SQLite `:memory:`: the database lives and dies with this handle, and no other process (so
   * no `dbsync`) can reach it.
   */
  readonly inMemory: boolean;
  /** PostgreSQL: the schema named by the URL's `schema` parameter (default: `public`). */
  readonly schema: string | undefined;
  /** Where it is, without credentials: for logs and error messages. */
  readonly description: string;
  /**
   * Runs a write in a transaction shared with the writes that arrive at the same moment (group
   * commit); settles after the commit.
   */
  write<T>(work: (tx: Kysely<Database>) => Promise<T>, options?: WriteOptions): Promise<T>;
  /**
   * Runs one of the named operations (operations.ts) in the group commit where the connection
   * is: SQLite's thread, or this one for PostgreSQL. Settles after the commit, as `write` does.
   */
  perform<N extends OperationName>(name: N, args: OperationArgs<N>, options?: WriteOptions): Promise<OperationResult<N>>;
  /**
   * SQLite only: copies the database into the new file `file` with SQLite's online backup, as
   * it stood at one moment, while other connections (a running server) go on writing. None on
   * PostgreSQL, whose own tool (pg_dump) does it.
   */
  readonly backup?: (file: string) => Promise<void>;
  /** Whether writes are refused for lack of space: told of every write's outcome. */
  readonly storage: StorageWatch;
  close(): Promise<void>;
}

const PG_INT8 = 20;
const POSTGRES_POOL_SIZE = 10;
/**
 * A pooled connection left idle this long is closed: longer than the longest wait between an
 * idle instance's statements (the runners' 30 s, the subscription poll's 60 s). With pg's 10 s
 * each of those found its connection closed and opened another, and PostgreSQL counts a
 * connection's start as a commit: 2 to 5 of an idle instance's 7 to 12 a minute.
 */
const POSTGRES_IDLE_CONNECTION_MS = 75_000;
/**
 * NOTIFICATIONS_DATABASE_TIMEOUT's default. A database that accepts the connection but never
 * speaks (or a blackholed address, where TCP itself waits about two minutes) must not hang a
 * request, the server's start or the CLI; five seconds cover a slow TLS handshake or
 * authentication across a WAN, and a healthy statement of ours, many times over.
 */
export const DEFAULT_DATABASE_TIMEOUT_MS = 5_000;

export interface OpenOptions {
  /**
   * SQLite: create the file when it does not exist (the default, for dbsync and tests). The
   * server and the other subcommands pass false: a mistyped path must be reported, not left
   * behind as an empty database that then looks merely out of date.
   */
  readonly create?: boolean;
  /**
   * The longest wait for a connection (new, or a free one of the pool) and, on SQLite, for a
   * lock another connection holds (NOTIFICATIONS_DATABASE_TIMEOUT).
   */
  readonly timeoutMs?: number;
  /**
   * PostgreSQL statements are bounded by `timeoutMs` too: by the server (statement_timeout) and
   * by the client, which gives up a connection whose server went silent. For the server, whose
   * requests must be answered in time; not for the CLI, whose migrations and purges may take
   * longer than a request should.
   */
  readonly boundStatements?: boolean;
  /** A pooled connection failed while no query was using it (dropped, terminated): it is replaced. */
  readonly onConnectionError?: (error: Error) => void;
  /**
   * SQLite: the thread that owns the connection failed (a bug: SQLite's own errors are answers);
   * every statement fails from then on.
   */
  readonly onThreadFailure?: (error: Error) => void;
  /** PostgreSQL: how the connections name themselves in pg_stat_activity. */
  readonly applicationName?: string;
  /** Told of every write's outcome (a new one, which reports nothing, by default). */
  readonly storage?: StorageWatch;
}

/** The SQLite file does not exist (its directory does): `dbsync` would create it. */
export class DatabaseMissing extends Error {
  override readonly name = 'DatabaseMissing';
  constructor(readonly path: string) {
    super(`the database file ${path} does not exist`);
  }
}

export function openDatabase(url: string, options: OpenOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options);
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return openPostgres(url, options);
  throw new Error(`unsupported database URL (expected sqlite:<path> or postgres://…): ${url}`);
}

function openSqlite(path: string, options: OpenOptions): DatabaseHandle {
  const inMemory = path === ':memory:';
  const mustExist = options.create === false && !inMemory;
  // A missing directory is left to SQLite's own error: dbsync could not create the file either.
  if (mustExist && !existsSync(path) && existsSync(dirname(path))) throw new DatabaseMissing(path);
  const timeoutMs = options.timeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS;
  // COMMIT writes the log without syncing it; the group commit syncs it in libuv's thread pool
  // before answering, so a commit is on disk before /receive answers, even across a power cut.
  const walSync = inMemory ? undefined : new WalSync(`${path}-wal`);
  const thread = SqliteThread.open({
    path,
    // A lock another connection holds (the CLI's eventpurge) is waited for, up to the time-out.
    // SQLite waits by sleeping in its thread, which runs every statement of the server: there it
    // waits only in short slices, between which the group commits wait without blocking
    // (sqlite-transaction.ts).
    busyTimeoutMs: options.boundStatements ? SQLITE_BUSY_SLICE_MS : timeoutMs,
    fileMustExist: mustExist,
    timeoutMs,
    ...(inMemory ? {} : { walPath: `${path}-wal` }),
    newFilePageSize: SQLITE_PAGE_SIZE,
    walCheckpointBytes: WAL_CHECKPOINT_BYTES,
    pragmas: [
      walSync ? 'synchronous = NORMAL' : 'synchronous = FULL',
      'foreign_keys = ON',
      // A multi-row insert keeps a statement journal (to undo itself alone); in a file, a batch
      // of matches spilled it to disk: a temporary file written, then deleted, at every commit.
      'temp_store = MEMORY',
    ],
  });
  const db = new Kysely<Database>({ dialect: new SqliteThreadDialect(thread) });
  const group = new GroupCommit(
    immediateTransaction(db, () => thread.rollback(), timeoutMs),
    1,
    walSync,
  );
  const storage = options.storage ?? new StorageWatch();
  const write = watchedWrite(group, storage);
  storage.probeWith(() => write(writeSpaceProbe));
  return {
    db,
    write,
    perform: (name, args, options) =>
      watched(() => thread.perform(name, args, options?.syncLater === true, transfersOf(name, args)), storage, options),
    storage,
    capabilities: SQLITE_CAPABILITIES,
    inMemory,
    schema: undefined,
    description: `sqlite:${path}`,
    backup: (file) => thread.backup(file),
    close: async () => {
      storage.stop();
      await walSync?.close();
      await db.destroy();
    },
  };
}

function openPostgres(url: string, options: OpenOptions): DatabaseHandle {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS;
  const {
    connectionString,
    schema,
    options: settings,
  } = postgresTarget(url, options.boundStatements ? [`statement_timeout=${timeoutMs}`] : []);
  const pool = new pg.Pool({
    connectionString,
    max: POSTGRES_POOL_SIZE,
    idleTimeoutMillis: POSTGRES_IDLE_CONNECTION_MS,
    connectionTimeoutMillis: timeoutMs,
    application_name: options.applicationName ?? 'svc-notifications',
    // A peer that vanished (a failover, a dropped route) is noticed by the kernel on idle connections too.
    keepAlive: true,
    ...(settings !== undefined ? { options: settings } : {}),
    // Timestamps are bigint microseconds: well inside the exact range of a JS number.
    types: { getTypeParser: (oid, format) => (oid === PG_INT8 ? Number : pg.types.getTypeParser(oid, format)) },
  });
  // An idle connection that fails (pg_terminate_backend, a restart, an idle time-out) is
  // removed by the pool, which then reports it here: without a listener, Node would end the
  // process. One in use reports through its query; between the statements of a transaction it
  // would emit 'error' with nobody listening, hence a listener on each connection for good.
  const reportConnectionError = (error: Error) => options.onConnectionError?.(error);
  pool.on('error', reportConnectionError);
  pool.on('connect', (client) => client.on('error', reportConnectionError));
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: boundedPool(pool, timeoutMs, options.boundStatements === true) }),
  });
  // One connection stays free of commits for reads (readiness, GET /eventmatch).
  const group = new GroupCommit(
    (work) => db.transaction().execute(work),
    POSTGRES_POOL_SIZE - 1,
    undefined,
    (work) => work(db),
  );
  const storage = options.storage ?? new StorageWatch();
  const write = watchedWrite(group, storage);
  storage.probeWith(() => write(writeSpaceProbe));
  return {
    db,
    write,
    perform: (name, args, options) => write((tx) => runOperation(tx, POSTGRES_CAPABILITIES, name, args), options),
    storage,
    capabilities: POSTGRES_CAPABILITIES,
    inMemory: false,
    schema,
    description: maskUrlPassword(url),
    close: () => {
      storage.stop();
      return db.destroy();
    },
  };
}

/** The group commit's writes, their outcomes told to `storage`. */
function watchedWrite(group: GroupCommit, storage: StorageWatch): DatabaseHandle['write'] {
  return (work, options) => watched(() => group.run(work, options), storage, options);
}

/** A write begun and its outcome told to `storage`. */
function watched<T>(write: () => Promise<T>, storage: StorageWatch, options: WriteOptions | undefined): Promise<T> {
  const begun = storage.begin({ mayChangeNothing: options?.mayChangeNothing === true });
  return write().then(
    (value) => {
      storage.observe(begun);
      return value;
    },
    (error: unknown) => {
      storage.observe(begun, error);
      throw error;
    },
  );
}

/**
 * Each commit writes every page it changed to the log, whole, and a delivery changes a page of
 * each of its indexes, most of them at places of their own (the index of deliveries by
 * subscription: anywhere). With SQLite's default 4 KiB pages the counts workload wrote ~48 KB of
 * log per event for ~2 KB of data; with 1 KiB pages, ~20 KB, and the file itself was smaller
 * (bench/history.md). Reads touch more, smaller pages, and the start-up load did not slow.
 */
const SQLITE_PAGE_SIZE = 1024;
/**
 * A checkpoint copies each page once however many commits changed it, so checkpointing at 40 MB
 * of log (SQLite's default is 1,000 pages: 1 MB at 1 KiB) copies far fewer.
 */
const WAL_CHECKPOINT_BYTES = 40 * 1024 * 1024;
function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

/**
 * The pool as Kysely sees it, with every wait bounded. pg-pool reports a connection that did
 * not come in time as "Connection terminated due to connection timeout" (a new one) or
 * "timeout exceeded when trying to connect" (the wait for a free one): said here in words an
 * operator reads without knowing pg. With `boundStatements`, a statement without an answer in
 * time gives up its connection: pg's own query_timeout would leave the statement running on it
 * and every later one queued behind it, and a silent server never cancels anything. A round
 * trip of several statements (postgres-round-trip.ts) is submitted as one query.
 */
function boundedPool(pool: pg.Pool, timeoutMs: number, boundStatements: boolean): PostgresPool {
  return {
    connect: async () => {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        const message = error instanceof Error ? error.message : '';
        if (/connection timeout|timeout exceeded when trying to connect/.test(message)) {
          throw new DatabaseUnavailable(`no answer from the database within ${seconds(timeoutMs)} (connect time-out)`, { cause: error });
        }
        throw error;
      }
      let broken: Error | undefined;
      const send = beginWithFirstStatement(client);
      const query = (text: string, parameters: readonly unknown[]) =>
        boundStatements
          ? within(send(text, parameters), timeoutMs, () => {
              broken = new DatabaseUnavailable(`no answer from the database within ${seconds(timeoutMs)} (statement time-out)`);
              connectionOf(client)?.stream.destroy();
              return broken;
            })
          : send(text, parameters);
      return {
        // Kysely passes a cursor only when streaming (which the service does not): it goes unbounded.
        query: ((textOrCursor: unknown, parameters?: readonly unknown[]) =>
          typeof textOrCursor === 'string'
            ? query(textOrCursor, parameters ?? [])
            : client.query(textOrCursor as pg.Submittable)) as unknown as PostgresPoolClient['query'],
        // A connection given up on is removed from the pool, not handed to the next caller.
        release: () => client.release(broken),
      };
    },
    end: () => pool.end(),
    // Kysely opens a connection of its own with these to cancel a statement whose query was
    // aborted; the service aborts none.
    options: pool.options,
  };
}

/** pg's connection behind a client: it has no public way to drop a connection at once. */
function connectionOf(client: pg.PoolClient): { stream: { destroy(): void } } | undefined {
  return (client as unknown as { connection?: { stream: { destroy(): void } } }).connection;
}
