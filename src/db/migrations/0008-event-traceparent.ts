/**
 * `traceparent` of an event: its receive span, as a W3C traceparent, when it was received with
 * tracing on (null otherwise). Policy calls and delivery attempts on rows claimed later
 * (retries, after a restart, by another instance) are children of that span. A nullable column
 * without a default: no rewrite of the table on either database.
 * Frozen, as every migration is; it imports nothing from the application. Independent of any
 * other column added since 0001, so it runs the same whichever migrations sit beside it.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').addColumn('traceparent', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('events').dropColumn('traceparent').execute();
}
