/**
 * `allowed_rate`: deliveries per minute a subscription's target allowed in its consent
 * (WebHook-Allowed-Rate), or null for no cap. Frozen, as every migration is; it imports nothing
 * from the application, and needs no column but its own.
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').addColumn('allowed_rate', 'integer').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('subscriptions').dropColumn('allowed_rate').execute();
}
