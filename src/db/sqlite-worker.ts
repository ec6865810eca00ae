/**
 * The worker thread side of sqlite-thread.ts: it owns the SQLite connection. It runs
 * - the named operations (operations.ts) in a group commit of its own, synced before each is
 *   answered, as the main thread's was;
 * - and the main thread's own statements, one at a time, in the order sent. A transaction the
 *   main thread begins holds the connection until it ends: the group commit waits for it.
 * It opens the database as soon as it starts and says so through the shared `opened` cell, on
 * which the main thread waits: opening stays synchronous for the callers of openDatabase.
 */
import type SQLiteModule from 'better-sqlite3';
import { Kysely, SqliteDialect, type SqliteDatabase } from 'kysely';
import { type MessagePort, workerData } from 'node:worker_threads';
import { nameThisThread, SQLITE_THREAD_NAME } from '../thread-name.js';
import { batchPerTurn } from '../turn-batch.js';
import { SQLITE_CAPABILITIES } from './capabilities.js';
import { GroupCommit } from './group-commit.js';
import { runOperation } from './operations.js';
import { immediateTransaction } from './sqlite-transaction.js';
import type { OpenAnswer, SqliteThreadOptions, ThreadAnswer, ThreadError, ThreadRequest } from './sqlite-thread.js';
import type { Database } from './tables.js';
import { WalSync } from './wal-sync.js';

const { options, port, opened } = workerData as { options: SqliteThreadOptions; port: MessagePort; opened: Int32Array };
nameThisThread(SQLITE_THREAD_NAME);

/** better-sqlite3 compiles a statement on every `prepare`: each shape is compiled once and kept. */
const STATEMENT_CACHE_LIMIT = 500;
/** The most pages better-sqlite3 lets one backup step copy: every page of any database of ours. */
const ALL_PAGES = 0x7fffffff;
/** The pause between two tries at turning the file to WAL. */
const SQLITE_BUSY_PAUSE_MS = 20;
/** Nothing ever notifies it: waiting on it is a synchronous sleep. */
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

let SQLite: typeof SQLiteModule | undefined;
let connection: SQLiteModule.Database | undefined;
const statements = new Map<string, SQLiteModule.Statement>();

async function open(): Promise<OpenAnswer> {
  try {
    // Loaded here, so that an addon that cannot load is an answer the main thread waits for.
    SQLite = (await import('better-sqlite3')).default;
    connection = openConnection(SQLite, options);
    return { ok: true };
  } catch (error) {
    return { ok: false, error: describe(error) };
  }
}

function openConnection(sqlite: typeof SQLiteModule, settings: SqliteThreadOptions): SQLiteModule.Database {
  const database = new sqlite(settings.path, { timeout: settings.busyTimeoutMs, fileMustExist: settings.fileMustExist });
  try {
    // Only a file with nothing in it yet takes it: turning it to WAL below is its first write.
    database.pragma(`page_size = ${settings.newFilePageSize}`);
    switchToWal(sqlite, database, settings.timeoutMs);
    for (const pragma of settings.pragmas) database.pragma(pragma);
    const pageSize = database.pragma('page_size', { simple: true }) as number;
    database.pragma(`wal_autocheckpoint = ${Math.ceil(settings.walCheckpointBytes / pageSize)}`);
    return database;
  } catch (error) {
    database.close();
    throw error;
  }
}

/**
 * Turning a new file to WAL is a write, which SQLite refuses at once, without its busy wait, to
 * a connection that read the file while another held the write lock (waiting could deadlock):
 * processes opening a new file together (two `dbsync`, a server and `dbsync`) would fail. It is
 * tried again until `timeoutMs` have passed, sleeping in between.
 */
function switchToWal(sqlite: typeof SQLiteModule, database: SQLiteModule.Database, timeoutMs: number): void {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      database.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (
        !(error instanceof sqlite.SqliteError) ||
        !error.code.startsWith('SQLITE_BUSY') ||
        performance.now() + SQLITE_BUSY_PAUSE_MS > deadline
      )
        throw error;
      Atomics.wait(SLEEPER, 0, 0, SQLITE_BUSY_PAUSE_MS);
    }
  }
}

function prepared(sql: string): SQLiteModule.Statement {
  let statement = statements.get(sql);
  if (statement) {
    statements.delete(sql);
  } else {
    statement = connection!.prepare(sql);
    if (statements.size >= STATEMENT_CACHE_LIMIT) statements.delete(statements.keys().next().value!);
  }
  statements.set(sql, statement);
  return statement;
}

function describe(error: unknown): ThreadError {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { message: error.message, name: error.name, ...(typeof code === 'string' ? { code } : {}) };
}

/** The connection's one writer at a time: a transaction of the main thread's, or one of the group commit's. */
class Gate {
  private tail: Promise<void> = Promise.resolve();
  private open: (() => void) | undefined;

  async enter(): Promise<void> {
    const before = this.tail;
    let open!: () => void;
    this.tail = new Promise((resolve) => (open = resolve));
    await before;
    this.open = open;
  }

  leave(): void {
    const open = this.open;
    this.open = undefined;
    open?.();
  }
}

const gate = new Gate();
/** Whether the main thread holds the gate: its transaction is open. */
let mainHolds = false;

/** Kysely's own SQLite driver, for the operations, on the same connection and statement cache. */
function operationsDatabase(): Kysely<Database> {
  const cached: SqliteDatabase = { close: () => undefined, prepare: (sql) => prepared(sql) };
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: cached }) });
}

function operationsGroupCommit(): GroupCommit {
  const db = operationsDatabase();
  const transaction = immediateTransaction(
    db,
    async () => void (connection!.inTransaction && connection!.exec('rollback')),
    options.timeoutMs,
  );
  const totalChanges = () => prepared('select total_changes()').pluck().get() as number;
  const walSync = options.walPath === undefined ? undefined : new WalSync(options.walPath, totalChanges);
  closeWalSync = () => walSync?.close();
  return new GroupCommit(
    async (work) => {
      await gate.enter();
      try {
        return await transaction(work);
      } finally {
        gate.leave();
      }
    },
    1,
    walSync,
  );
}

let group: GroupCommit | undefined;
let closeWalSync: () => Promise<void> | undefined = () => undefined;

/** One of the main thread's statements; a BEGIN waits for the gate, which is left when no transaction is open any more. */
async function runStatement(request: Exclude<ThreadRequest, { kind: 'perform' }>): Promise<ThreadAnswer> {
  const database = connection!;
  const begins = request.kind === 'query' && /^\s*begin\b/i.test(request.sql);
  if (begins) {
    await gate.enter();
    mainHolds = true;
  }
  try {
    switch (request.kind) {
      case 'query': {
        const statement = prepared(request.sql);
        if (statement.reader) return { id: request.id, rows: statement.all(request.parameters) };
        return { id: request.id, changes: statement.run(request.parameters).changes };
      }
      case 'rollback':
        if (database.inTransaction) database.exec('rollback');
        return { id: request.id, changes: 0 };
      case 'backup':
        // Every page in one step: a step holds one read transaction, so the copy is of one
        // moment; in smaller steps each write between two steps would start the copy over.
        await database.backup(request.file, { progress: () => ALL_PAGES });
        return { id: request.id, changes: 0 };
      case 'close':
        await closeWalSync();
        database.close();
        return { id: request.id, changes: 0 };
      default:
        throw new Error(`unknown request ${(request as { kind: string }).kind}`);
    }
  } catch (error) {
    return { id: request.id, error: describe(error) };
  } finally {
    if (mainHolds && !database.inTransaction) {
      mainHolds = false;
      gate.leave();
    }
  }
}

async function perform(request: Extract<ThreadRequest, { kind: 'perform' }>): Promise<ThreadAnswer> {
  group ??= operationsGroupCommit();
  try {
    const value = await group.run((tx) => runOperation(tx, SQLITE_CAPABILITIES, request.name, request.args as never), {
      syncLater: request.syncLater,
    });
    return { id: request.id, value };
  } catch (error) {
    return { id: request.id, error: describe(error) };
  }
}

const answer = batchPerTurn<ThreadAnswer>((answers) => port.postMessage(answers));
let statementsInOrder: Promise<unknown> = Promise.resolve();

port.postMessage(await open());
Atomics.store(opened, 0, 1);
Atomics.notify(opened, 0);

port.on('message', (requests: ThreadRequest[]) => {
  for (const request of requests) {
    if (!connection) answer({ id: request.id, error: { message: 'the database did not open' } });
    else if (request.kind === 'perform') void perform(request).then(answer);
    else statementsInOrder = statementsInOrder.then(() => runStatement(request)).then(answer);
  }
});
