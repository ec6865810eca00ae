/**
 * Pull delivery: a subscription's `delivery` (`push`, the default for every existing one, or
 * `pull`); a match's `cursor`, its place in the reading order once it is readable; and the one
 * counter cursors are taken from. A pull subscription stores '' as its target_url, so the
 * column stays NOT NULL and SQLite needs no rebuild of the table.
 * Frozen, as every migration is; it imports nothing from the application.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('subscriptions')
    .addColumn('delivery', 'varchar(8)', (c) => c.notNull().defaultTo('push'))
    .execute();
  await db.schema.alterTable('matches').addColumn('cursor', 'bigint').execute();
  // Reading a subscription's events after a cursor, and acknowledging up to one.
  await db.schema
    .createIndex('matches_subscription_cursor')
    .on('matches')
    .columns(['subscription_uuid', 'cursor'])
    .where(sql.ref('cursor'), 'is not', null)
    .execute();
  await db.schema
    .createTable('pull_cursor')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('last', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into pull_cursor (id, last) values (1, 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('pull_cursor').execute();
  await db.schema.dropIndex('matches_subscription_cursor').execute();
  await db.schema.alterTable('matches').dropColumn('cursor').execute();
  await db.schema.alterTable('subscriptions').dropColumn('delivery').execute();
}
