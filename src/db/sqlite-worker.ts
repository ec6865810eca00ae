/**
 * The worker thread side of sqlite-thread.ts: it owns the SQLite connection and runs every
 * statement the main thread sends, one at a time, answering each with its rows or its error.
 * It opens the database as soon as it starts and says so through the shared `opened` cell, on
 * which the main thread waits: opening stays synchronous for the callers of openDatabase.
 */
import type SQLiteModule from 'better-sqlite3';
import { type MessagePort, workerData } from 'node:worker_threads';
import type { OpenAnswer, SqliteThreadOptions, ThreadAnswer, ThreadRequest } from './sqlite-thread.js';

const { options, port, opened } = workerData as { options: SqliteThreadOptions; port: MessagePort; opened: Int32Array };

/** better-sqlite3 compiles a statement on every `prepare`: each shape is compiled once and kept. */
const STATEMENT_CACHE_LIMIT = 500;
const statements = new Map<string, SQLiteModule.Statement>();
let database: SQLiteModule.Database | undefined;
let SQLite: typeof SQLiteModule;

async function open(): Promise<OpenAnswer> {
  try {
    // Loaded here, so that an addon that cannot load is an answer the main thread waits for.
    SQLite = (await import('better-sqlite3')).default;
    database = openConnection(options);
    return { ok: true };
  } catch (error) {
    return { ok: false, error: describe(error) };
  }
}

function openConnection(settings: SqliteThreadOptions): SQLiteModule.Database {
  const connection = new SQLite(settings.path, { timeout: settings.busyTimeoutMs, fileMustExist: settings.fileMustExist });
  try {
    switchToWal(connection, settings.openTimeoutMs);
    for (const pragma of settings.pragmas) connection.pragma(pragma);
    return connection;
  } catch (error) {
    connection.close();
    throw error;
  }
}

function prepared(sql: string): SQLiteModule.Statement {
  let statement = statements.get(sql);
  if (statement) {
    statements.delete(sql);
  } else {
    statement = database!.prepare(sql);
    if (statements.size >= STATEMENT_CACHE_LIMIT) statements.delete(statements.keys().next().value!);
  }
  statements.set(sql, statement);
  return statement;
}

function run(request: ThreadRequest): ThreadAnswer | Promise<ThreadAnswer> {
  const db = database!;
  try {
    switch (request.kind) {
      case 'query': {
        const statement = prepared(request.sql);
        if (statement.reader) return { id: request.id, rows: statement.all(request.parameters) };
        const { changes } = statement.run(request.parameters);
        return { id: request.id, changes };
      }
      case 'rollback':
        // SQLite has already rolled back after SQLITE_FULL, SQLITE_IOERR or SQLITE_NOMEM in a
        // COMMIT: a ROLLBACK then fails and would hide the error that says what happened.
        if (db.inTransaction) db.exec('rollback');
        return { id: request.id, changes: 0 };
      case 'backup':
        // Every page in one step: a step holds one read transaction, so the copy is of one
        // moment; in smaller steps each write between two steps would start the copy over.
        return db.backup(request.file, { progress: () => ALL_PAGES }).then(
          () => ({ id: request.id, changes: 0 }),
          (error: unknown) => ({ id: request.id, error: describe(error) }),
        );
      case 'close':
        db.close();
        return { id: request.id, changes: 0 };
    }
  } catch (error) {
    return { id: request.id, error: describe(error) };
  }
}

function describe(error: unknown): { message: string; code?: string } {
  if (SQLite !== undefined && error instanceof SQLite.SqliteError) return { message: error.message, code: error.code };
  return { message: error instanceof Error ? error.message : String(error) };
}

/** The most pages better-sqlite3 lets one backup step copy: every page of any database of ours. */
const ALL_PAGES = 0x7fffffff;
/** The pause between two tries at turning the file to WAL. */
const SQLITE_BUSY_PAUSE_MS = 20;
/** Nothing ever notifies it: waiting on it is a synchronous sleep. */
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

/**
 * Turning a new file to WAL is a write, which SQLite refuses at once, without its busy wait, to
 * a connection that read the file while another held the write lock (waiting could deadlock):
 * processes opening a new file together (two `dbsync`, a server and `dbsync`) would fail. It is
 * tried again until `timeoutMs` have passed, sleeping in between.
 */
function switchToWal(connection: SQLiteModule.Database, timeoutMs: number): void {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      connection.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (
        !(error instanceof SQLite.SqliteError) ||
        !error.code.startsWith('SQLITE_BUSY') ||
        performance.now() + SQLITE_BUSY_PAUSE_MS > deadline
      )
        throw error;
      Atomics.wait(SLEEPER, 0, 0, SQLITE_BUSY_PAUSE_MS);
    }
  }
}

port.postMessage(await open());
Atomics.store(opened, 0, 1);
Atomics.notify(opened, 0);

port.on('message', (request: ThreadRequest) => {
  if (!database) return port.postMessage({ id: request.id, error: { message: 'the database did not open' } } satisfies ThreadAnswer);
  const answer = run(request);
  if (answer instanceof Promise) void answer.then((settled) => port.postMessage(settled));
  else port.postMessage(answer);
  if (request.kind === 'close') port.close();
});
