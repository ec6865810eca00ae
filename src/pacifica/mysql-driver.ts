/**
 * The original's MySQL or MariaDB database (peewee's MySQLDatabase), through mysql2: statements
 * prepared on the server, a long result streamed on a connection of its own.
 */
import mysql from 'mysql2';
import type { ServerSource } from './source-url.js';
import {
  CONNECT_TIMEOUT_MS,
  firstLine,
  inPages,
  type SourceRow,
  SourceUnreachable,
  type SourceValue,
  type SqlDriver,
  whereIs,
} from './sql-driver.js';

async function connect(location: ServerSource): Promise<mysql.Connection> {
  const url = new URL(location.url);
  const connection = mysql.createConnection({
    host: location.host,
    port: location.port,
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    database: location.database,
    connectTimeout: CONNECT_TIMEOUT_MS,
    charset: 'utf8mb4',
    // Times stay the text the original wrote (naive local times); mysql2 would read them in this process's zone.
    dateStrings: true,
    supportBigNumbers: true,
  });
  // A connection lost between queries is reported by the next query; without a listener Node would end the process.
  connection.on('error', () => undefined);
  try {
    await connection.promise().connect();
    return connection;
  } catch (error) {
    connection.destroy();
    throw new SourceUnreachable(`cannot reach the original's database at ${whereIs(location)} (MySQL/MariaDB): ${firstLine(error)}`);
  }
}

export async function openMysqlDriver(location: ServerSource): Promise<SqlDriver> {
  const connection = await connect(location);
  const streams = new Set<mysql.Connection>();
  const query = async (sql: string, params: readonly SourceValue[] = []) => {
    const [rows] = await connection.promise().execute(sql, params as (string | number | bigint | null)[]);
    return rows as SourceRow[];
  };
  return {
    quote: (identifier) => `\`${identifier.replaceAll('`', '``')}\``,
    param: () => '?',
    query,
    async *pages(sql, params, size) {
      const own = await connect(location);
      streams.add(own);
      try {
        yield* inPages(own.query({ sql, values: [...params] }).stream({ highWaterMark: size() }), size);
      } finally {
        streams.delete(own);
        own.destroy();
      }
    },
    tables: async () =>
      (await query('select table_name as name from information_schema.tables where table_schema = database()')).map((row) =>
        String(row.name),
      ),
    columns: async (table) =>
      (
        await query('select column_name as name from information_schema.columns where table_schema = database() and table_name = ?', [
          table,
        ])
      ).map((row) => String(row.name)),
    close: async () => {
      for (const own of streams) own.destroy();
      await connection.promise().end();
    },
  };
}
