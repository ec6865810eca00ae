/**
 * better-sqlite3 compiles a statement on every `prepare`, and Kysely prepares every query it
 * runs: that compile was the largest single cost on the receive path. The service issues a
 * small, fixed set of query shapes, so each shape is compiled once and kept (least recently
 * used dropped beyond the limit: multi-row inserts make a shape per row count).
 */
import type SQLite from 'better-sqlite3';
import type { SqliteDatabase } from 'kysely';

const LIMIT = 500;

export function withStatementCache(database: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SQLite.Statement>();
  return {
    close: () => database.close(),
    prepare: (sql) => {
      let statement = statements.get(sql);
      if (statement) {
        statements.delete(sql);
      } else {
        statement = database.prepare(sql);
        if (statements.size >= LIMIT) statements.delete(statements.keys().next().value!);
      }
      statements.set(sql, statement);
      return statement;
    },
  };
}
