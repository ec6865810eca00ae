/**
 * The original's SQLite file, opened read-only: one connection for statements, one more for
 * each long result being read (a connection runs nothing else while it steps through one).
 */
import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import Sqlite from 'better-sqlite3';
import type { FileSource } from './source-url.js';
import { firstLine, inPages, type SourceRow, SourceUnreachable, type SourceValue, type SqlDriver } from './sql-driver.js';

function open(location: FileSource): Sqlite.Database {
  if (!existsSync(location.path)) {
    // peewee reads sqlite:///a/b as the relative path a/b: an absolute one takes four slashes.
    const hint = isAbsolute(location.path)
      ? ''
      : ' (sqlite:///path is relative to the working directory; an absolute path takes four slashes: sqlite:////path)';
    throw new SourceUnreachable(`cannot read the original's database: no file ${location.path}${hint}`);
  }
  try {
    // The original may be writing: wait for its locks as long as connecting may take.
    return new Sqlite(location.path, { readonly: true, fileMustExist: true, timeout: 8_000 });
  } catch (error) {
    throw new SourceUnreachable(`cannot read the original's database ${location.path}: ${firstLine(error)}`);
  }
}

export async function openSqliteDriver(location: FileSource): Promise<SqlDriver> {
  const connection = open(location);
  try {
    // A file that is not a database says so at the first read, not at open.
    connection.prepare('select count(*) from sqlite_master').get();
  } catch (error) {
    connection.close();
    throw new SourceUnreachable(`cannot read the original's database ${location.path}: ${firstLine(error)}`);
  }
  const readers = new Set<Sqlite.Database>();
  const query = async (sql: string, params: readonly SourceValue[] = []) => connection.prepare(sql).all(...params) as SourceRow[];
  return {
    quote: (identifier) => `"${identifier.replaceAll('"', '""')}"`,
    param: () => '?',
    query,
    async *pages(sql, params, size) {
      const reader = open(location);
      readers.add(reader);
      try {
        yield* inPages(reader.prepare(sql).iterate(...params), size);
      } finally {
        readers.delete(reader);
        reader.close();
      }
    },
    tables: async () => (await query(`select name from sqlite_master where type = 'table'`)).map((row) => String(row.name)),
    columns: async (table) => (await query('select name from pragma_table_info(?)', [table])).map((row) => String(row.name)),
    close: async () => {
      for (const reader of readers) reader.close();
      connection.close();
    },
  };
}
