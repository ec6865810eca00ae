/**
 * An index of each owner's live (not deleted) subscriptions: every create counts them against
 * NOTIFICATIONS_USER_SUBSCRIPTIONS, and the index by owner that 0001 made holds the deleted
 * ones too, so an owner who had created and deleted many would have each count visit them all.
 * Frozen, as every migration is; it imports nothing from the application.
 */
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('subscriptions_live_owner')
    .on('subscriptions')
    .column('owner')
    .where(sql.ref('deleted'), 'is', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('subscriptions_live_owner').execute();
}
