/**
 * The original's PostgreSQL database, read in one read-only transaction (every table as of one
 * moment, while the original may still be taking events), long results through a cursor.
 */
import pg from 'pg';
import type { ServerSource } from './source-url.js';
import {
  CONNECT_TIMEOUT_MS,
  firstLine,
  type SourceRow,
  SourceUnreachable,
  type SourceValue,
  type SqlDriver,
  whereIs,
} from './sql-driver.js';

const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;
const INT8 = 20;

export async function openPostgresDriver(location: ServerSource): Promise<SqlDriver> {
  const client = new pg.Client({
    connectionString: location.url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    application_name: 'svc-notifications-cmd import-pacifica',
    // Times stay the text the original wrote (naive local times): pg would read them in this
    // process's zone. Counts come as int8.
    types: {
      getTypeParser: (oid, format) =>
        oid === TIMESTAMP || oid === TIMESTAMPTZ ? (text: string) => text : oid === INT8 ? Number : pg.types.getTypeParser(oid, format),
    },
  });
  // A connection lost between queries is reported by the next query; without a listener Node would end the process.
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('begin isolation level repeatable read read only');
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new SourceUnreachable(`cannot reach the original's database at ${whereIs(location)} (PostgreSQL): ${firstLine(error)}`);
  }
  let cursors = 0;
  const query = async (sql: string, params: readonly SourceValue[] = []) =>
    (await client.query<SourceRow>(sql, params as SourceValue[])).rows;
  return {
    quote: (identifier) => `"${identifier.replaceAll('"', '""')}"`,
    param: (index) => `$${index}`,
    query,
    async *pages(sql, params, size) {
      const cursor = `import_${++cursors}`;
      await query(`declare ${cursor} no scroll cursor for ${sql}`, params);
      try {
        for (;;) {
          const wanted = size();
          const rows = await query(`fetch ${wanted} from ${cursor}`);
          if (rows.length > 0) yield rows;
          if (rows.length < wanted) return;
        }
      } finally {
        await query(`close ${cursor}`).catch(() => undefined);
      }
    },
    tables: async () =>
      (await query(`select table_name as name from information_schema.tables where table_schema = any(current_schemas(false))`)).map(
        (row) => String(row.name),
      ),
    columns: async (table) =>
      (
        await query(
          `select column_name as name from information_schema.columns where table_schema = any(current_schemas(false)) and table_name = $1`,
          [table],
        )
      ).map((row) => String(row.name)),
    close: async () => {
      await client.query('commit').catch(() => undefined);
      await client.end();
    },
  };
}
