/**
 * A pool of PostgreSQL connections as the service uses it: Kysely over pg, every wait bounded,
 * and a group commit over the pool. The main thread has one (reads, and the writes that are
 * not operations); the PostgreSQL thread has one for the operations (postgres-worker.ts).
 */
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { within } from '../time/within.js';
import { GroupCommit } from './group-commit.js';
import { postgresTarget } from './postgres-target.js';
import type { Database } from './tables.js';
import { DatabaseUnavailable } from './unavailable.js';

const PG_INT8 = 20;

export interface PostgresPoolSettings {
  readonly url: string;
  /** The longest wait for a connection, and with `boundStatements` for a statement's answer. */
  readonly timeoutMs: number;
  /** Statements are bounded by `timeoutMs` (see boundedPool). */
  readonly boundStatements: boolean;
  /** How the connections name themselves in pg_stat_activity. */
  readonly applicationName: string;
  /** Connections at most. */
  readonly size: number;
  /** Commits in flight at once at most: fewer than `size` leaves connections free for reads. */
  readonly commitLanes: number;
}

export interface PostgresConnections {
  readonly db: Kysely<Database>;
  readonly group: GroupCommit;
  /** The schema named by the URL's `schema` parameter. */
  readonly schema: string | undefined;
}

/** `onConnectionError`: a pooled connection failed while no query was using it; it is replaced. */
export function openPostgresPool(settings: PostgresPoolSettings, onConnectionError?: (error: Error) => void): PostgresConnections {
  const { timeoutMs } = settings;
  const { connectionString, schema, options } = postgresTarget(
    settings.url,
    settings.boundStatements ? [`statement_timeout=${timeoutMs}`] : [],
  );
  const pool = new pg.Pool({
    connectionString,
    max: settings.size,
    connectionTimeoutMillis: timeoutMs,
    application_name: settings.applicationName,
    // A peer that vanished (a failover, a dropped route) is noticed by the kernel on idle connections too.
    keepAlive: true,
    ...(options !== undefined ? { options } : {}),
    // Timestamps are bigint microseconds: well inside the exact range of a JS number.
    types: { getTypeParser: (oid, format) => (oid === PG_INT8 ? Number : pg.types.getTypeParser(oid, format)) },
  });
  // An idle connection that fails (pg_terminate_backend, a restart, an idle time-out) is
  // removed by the pool, which then reports it here: without a listener, Node would end the
  // process. One in use reports through its query; between the statements of a transaction it
  // would emit 'error' with nobody listening, hence a listener on each connection for good.
  const reportConnectionError = (error: Error) => onConnectionError?.(error);
  pool.on('error', reportConnectionError);
  pool.on('connect', (client) => client.on('error', reportConnectionError));
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: boundedPool(pool, timeoutMs, settings.boundStatements) }),
  });
  const group = new GroupCommit(
    (work) => db.transaction().execute(work),
    settings.commitLanes,
    undefined,
    (work) => work(db),
  );
  return { db, group, schema };
}

function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

/**
 * The pool as Kysely sees it, with every wait bounded. pg-pool reports a connection that did
 * not come in time as "Connection terminated due to connection timeout" (a new one) or
 * "timeout exceeded when trying to connect" (the wait for a free one): said here in words an
 * operator reads without knowing pg. With `boundStatements`, a statement without an answer in
 * time gives up its connection: pg's own query_timeout would leave the statement running on it
 * and every later one queued behind it, and a silent server never cancels anything.
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
      if (!boundStatements) return client;
      let broken: Error | undefined;
      const query = (text: string, parameters: readonly unknown[]) =>
        within(client.query(text, parameters as unknown[]), timeoutMs, () => {
          broken = new DatabaseUnavailable(`no answer from the database within ${seconds(timeoutMs)} (statement time-out)`);
          connectionOf(client)?.stream.destroy();
          return broken;
        });
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
  };
}

/** pg's connection behind a client: it has no public way to drop a connection at once. */
function connectionOf(client: pg.PoolClient): { stream: { destroy(): void } } | undefined {
  return (client as unknown as { connection?: { stream: { destroy(): void } } }).connection;
}
