/**
 * `notices`: whether a subscription receives the service's own events about its owner's other
 * subscriptions (disabled, enabled, failing); 0 (no, for every existing one) or 1. An integer
 * on both databases, not a boolean: better-sqlite3 cannot bind one. A constant default: no
 * rewrite of the table on PostgreSQL (11 and later), and SQLite adds a NOT NULL column only with one.
 * Frozen, as every migration is; it imports nothing from the application, and needs no column
 * but its own.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('subscriptions')
    .addColumn('notices', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').dropColumn('notices').execute();
}
