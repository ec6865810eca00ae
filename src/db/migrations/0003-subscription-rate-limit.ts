/**
 * `rate_limit`: deliveries per second to a subscription's target, or null for no limit.
 * Frozen, as every migration is; it imports nothing from the application. Independent of any
 * other column added since 0001, so it runs the same whichever migrations sit beside it.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').addColumn('rate_limit', 'integer').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').dropColumn('rate_limit').execute();
}
