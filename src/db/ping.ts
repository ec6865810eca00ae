/** The least the database can be asked: whether it answers at all (`notifications_database_up`). */
import { type Kysely, sql } from 'kysely';
import type { Database } from './tables.js';

export async function ping(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}
