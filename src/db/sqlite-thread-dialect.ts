/**
 * Kysely over the SQLite thread (sqlite-thread.ts): Kysely's own SQLite compiler, adapter and
 * introspector, with a driver whose one connection sends each statement to the thread. As with
 * Kysely's SQLite driver, the connection is held by one user at a time (a transaction holds it
 * from BEGIN to COMMIT).
 */
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { SqliteThread } from './sqlite-thread.js';

export class SqliteThreadDialect implements Dialect {
  constructor(private readonly thread: SqliteThread) {}
  createDriver(): Driver {
    return new SqliteThreadDriver(this.thread);
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  createAdapter() {
    return new SqliteAdapter();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new SqliteIntrospector(db);
  }
}

class SqliteThreadDriver implements Driver {
  private readonly connection: SqliteThreadConnection;
  private held: Promise<void> | undefined;
  private release: (() => void) | undefined;

  constructor(private readonly thread: SqliteThread) {
    this.connection = new SqliteThreadConnection(thread);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    while (this.held) await this.held;
    this.held = new Promise((resolve) => (this.release = resolve));
    return this.connection;
  }

  async releaseConnection(): Promise<void> {
    const release = this.release;
    this.held = undefined;
    this.release = undefined;
    release?.();
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin'));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(): Promise<void> {
    await this.thread.rollback();
  }

  async destroy(): Promise<void> {
    await this.thread.close();
  }
}

class SqliteThreadConnection implements DatabaseConnection {
  constructor(private readonly thread: SqliteThread) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.thread.query(compiled.sql, compiled.parameters);
    if (result.rows) return { rows: result.rows as R[] };
    return { rows: [], numAffectedRows: BigInt(result.changes ?? 0) };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported by the SQLite thread');
  }
}
