/**
 * Failures in a row, per subscription: a row while its deliveries fail, removed by the next
 * delivery that succeeds (and when the subscription is disabled or enabled). Its own table, so
 * that the common case (nothing failing) writes nothing to the subscriptions and leaves the
 * table empty.
 * Frozen, as every migration is; it imports nothing from the application.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('failure_runs')
    .addColumn('subscription_uuid', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('failure_runs').execute();
}
