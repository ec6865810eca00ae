/**
 * SQLite's `PRAGMA data_version`: a number that changes when another connection to the file has
 * committed since this connection last asked, and never for this connection's own commits. It
 * is the connection's own count, so it must be asked on the connection whose view it is about:
 * the server has one (the SQLite thread's), which every statement of `db` uses.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './tables.js';

/** The data version, as a column of a statement that reads tables: both are of one moment. */
export const DATA_VERSION = sql<number>`(select data_version from pragma_data_version)`;

export async function dataVersion(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ data_version: number }>`pragma data_version`.execute(db);
  return rows[0]!.data_version;
}
