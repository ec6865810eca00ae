/**
 * Opens the database a URL names: `sqlite:<path>` (embedded, one instance) or `postgres://…`
 * (several instances). What differs between them is declared once, as capabilities.
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type PostgresPool, type Transaction } from 'kysely';
import pg from 'pg';
import { maskUrlPassword } from '../config/values.js';
import { GroupCommit } from './group-commit.js';
import { WalSync } from './wal-sync.js';
import { withStatementCache } from './sqlite-statement-cache.js';
import type { Database } from './tables.js';

export interface Capabilities {
  readonly backend: 'sqlite' | 'postgres';
  /** Claims can skip rows another instance holds (`FOR UPDATE SKIP LOCKED`). */
  readonly skipLocked: boolean;
  /** More than one process may use the database at once. */
  readonly sharedByInstances: boolean;
  /**
   * A transaction can lock single rows against concurrent deletes (`FOR KEY SHARE`); SQLite
   * needs none, its one writer holds the whole database.
   */
  readonly rowLocks: boolean;
}

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
  write<T>(work: (tx: Transaction<Database>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A PostgreSQL connection was not made within POSTGRES_CONNECT_TIMEOUT_MS. */
export class DatabaseNotAnswering extends Error {
  override readonly name = 'DatabaseNotAnswering';
}

const PG_INT8 = 20;
const POSTGRES_POOL_SIZE = 10;
/**
 * A database that accepts the connection but never speaks (or a blackholed address, where TCP
 * itself waits about two minutes) must not hang the server's start or the CLI: a connection,
 * new or a free one of the pool, is waited for this long at most. Ten seconds cover a slow
 * TLS handshake or authentication across a WAN many times over.
 */
export const POSTGRES_CONNECT_TIMEOUT_MS = 10_000;
// Waiting this long for a lock held by another connection beats failing at once (SQLITE_BUSY).
const SQLITE_BUSY_TIMEOUT_MS = 5_000;

export interface OpenOptions {
  /**
   * SQLite: create the file when it does not exist (the default, for dbsync and tests). The
   * server and the other subcommands pass false: a mistyped path must be reported, not left
   * behind as an empty database that then looks merely out of date.
   */
  readonly create?: boolean;
}

/** The SQLite file does not exist (its directory does): `dbsync` would create it. */
export class DatabaseMissing extends Error {
  override readonly name = 'DatabaseMissing';
  constructor(readonly path: string) {
    super(`the database file ${path} does not exist`);
  }
}

export function openDatabase(url: string, options: OpenOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options.create ?? true);
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return openPostgres(url);
  throw new Error(`unsupported database URL (expected sqlite:<path> or postgres://…): ${url}`);
}

function openSqlite(path: string, create: boolean): DatabaseHandle {
  const inMemory = path === ':memory:';
  const mustExist = !create && !inMemory;
  // A missing directory is left to SQLite's own error: dbsync could not create the file either.
  if (mustExist && !existsSync(path) && existsSync(dirname(path))) throw new DatabaseMissing(path);
  const database = new SQLite(path, { timeout: SQLITE_BUSY_TIMEOUT_MS, fileMustExist: mustExist });
  database.pragma('journal_mode = WAL');
  // COMMIT writes the log without syncing it; the group commit syncs it off the main thread
  // before answering, so a commit is on disk before /receive answers, even across a power cut.
  const walSync = inMemory ? undefined : new WalSync(`${path}-wal`);
  database.pragma(walSync ? 'synchronous = NORMAL' : 'synchronous = FULL');
  database.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) });
  const group = new GroupCommit(db, 1, walSync && (() => walSync.sync()));
  return {
    db,
    write: (work) => group.run(work),
    capabilities: { backend: 'sqlite', skipLocked: false, sharedByInstances: false, rowLocks: false },
    inMemory,
    schema: undefined,
    description: `sqlite:${path}`,
    close: async () => {
      await walSync?.close();
      await db.destroy();
    },
  };
}

function openPostgres(url: string): DatabaseHandle {
  const parsed = new URL(url);
  // `?schema=name`: our own parameter (pg does not know it), so one database can hold several
  // deployments, or one test each.
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  if (schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`invalid schema name in the database URL: ${schema}`);
  }
  const pool = new pg.Pool({
    connectionString: parsed.toString(),
    max: POSTGRES_POOL_SIZE,
    connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
    // Timestamps are bigint microseconds: well inside the exact range of a JS number.
    types: { getTypeParser: (oid, format) => (oid === PG_INT8 ? Number : pg.types.getTypeParser(oid, format)) },
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: sayingTimeouts(pool) }) });
  // One connection stays free of commits for reads (readiness, GET /eventmatch).
  const group = new GroupCommit(db, POSTGRES_POOL_SIZE - 1);
  return {
    db,
    write: (work) => group.run(work),
    capabilities: { backend: 'postgres', skipLocked: true, sharedByInstances: true, rowLocks: true },
    inMemory: false,
    schema,
    description: maskUrlPassword(url),
    close: () => db.destroy(),
  };
}

/**
 * pg-pool reports its time-out as "Connection terminated due to connection timeout" (a new
 * connection) or "timeout exceeded when trying to connect" (the wait for a free one): said
 * here in words an operator reads without knowing pg.
 */
function sayingTimeouts(pool: pg.Pool): PostgresPool {
  return {
    connect: () =>
      pool.connect().catch((error: unknown) => {
        const message = error instanceof Error ? error.message : '';
        if (/connection timeout|timeout exceeded when trying to connect/.test(message)) {
          throw new DatabaseNotAnswering(`no answer from the database within ${POSTGRES_CONNECT_TIMEOUT_MS / 1000} s (connect time-out)`, { cause: error });
        }
        throw error;
      }),
    end: () => pool.end(),
  };
}
