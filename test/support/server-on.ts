/**
 * The set-up most end-to-end suites share: a fresh database of one backend, its schema made by
 * the real `dbsync`, and the built server running on it; all of it stopped and removed after the
 * suite. One place for it, so that a change of how a suite gets its server is made once.
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import type { TestBackend, TestDatabase } from './database.js';
import { type RunningServer, runCli, type ServerOptions, startServer } from './processes.js';

export interface ServedDatabase extends RunningServer {
  /** The suite's database (a URL the CLI or another server can be given). */
  readonly database: TestDatabase;
  /** The database opened in the test process too; only with `{ open: true }`. */
  readonly db: DatabaseHandle;
}

export interface ServerOnOptions extends ServerOptions {
  /** Opens the database in the test process as well (`db`), after dbsync, before the server starts. */
  open?: boolean;
}

/**
 * A fresh database of `backend` (or made by `create`) with its schema made by the real
 * `svc-notifications-cmd dbsync`; removed again if dbsync fails.
 */
export async function syncedDatabase(from: TestBackend | (() => Promise<TestDatabase>)): Promise<TestDatabase> {
  const database = await (typeof from === 'function' ? from() : from.create());
  const sync = await runCli(['--database-url', database.url, 'dbsync']);
  if (sync.code !== 0) await database.cleanup();
  assert.equal(sync.code, 0, sync.stderr);
  return database;
}

/**
 * For a describe block (`describeOn(backend, …)`): registers a `before` hook that creates a
 * database of `backend`, runs `svc-notifications-cmd dbsync` on it (which must exit 0) and starts
 * the server with NOTIFICATIONS_DATABASE_URL and `env`, and an `after` hook that stops the server,
 * closes `db` and removes the database. The handle is the running server (url, logs, stop) and the
 * database; it can be used once the suite's tests run.
 *
 * `env` may be a function: it is called in the `before` hook, so it can read what `before` hooks
 * registered earlier set up (a policy stub's URL). `after` hooks run in the order they are
 * registered: one registered after this call runs once the server has stopped.
 */
export function serverOn(
  backend: TestBackend,
  env: Record<string, string> | (() => Record<string, string>) = {},
  { open = false, ...serverOptions }: ServerOnOptions = {},
): ServedDatabase {
  let database: TestDatabase | undefined;
  let db: DatabaseHandle | undefined;
  let running: RunningServer | undefined;
  const started = (): RunningServer => {
    if (!running) throw new Error('serverOn: the server is started in a before hook; use it in a test or a later hook');
    return running;
  };
  before(async () => {
    database = await syncedDatabase(backend);
    if (open) db = openDatabase(database.url);
    running = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, ...(typeof env === 'function' ? env() : env) }, serverOptions);
  });
  after(async () => {
    await running?.stop();
    await db?.close();
    await database?.cleanup();
  });
  return {
    get url() {
      return started().url;
    },
    get process() {
      return started().process;
    },
    logs: () => started().logs(),
    stop: (signal) => started().stop(signal),
    get database() {
      if (!database) throw new Error('serverOn: the database is created in a before hook; use it in a test or a later hook');
      return database;
    },
    get db() {
      if (!db) throw new Error('serverOn: db is opened only with { open: true }, in a before hook');
      return db;
    },
  };
}
