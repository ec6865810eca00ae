/**
 * Version 2: every subscription gets a Standard Webhooks signing secret, and keeps the one it
 * replaced, and when, for the overlap after a rotation. Subscriptions that exist already are
 * given a secret here (stored as plain text, as `auth` is before NOTIFICATIONS_SECRET_KEY is
 * set: this program knows no key; it is sealed when next rotated). Frozen, like 0001.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';

const PAGE = 1_000;

interface Subscriptions {
  subscriptions: { uuid: string; signing_secret: string };
}

export async function up(untyped: Kysely<unknown>): Promise<void> {
  const db = untyped as unknown as Kysely<Subscriptions>;
  // SQLite adds a NOT NULL column only with a default; every row is given its own just after.
  await untyped.schema
    .alterTable('subscriptions')
    .addColumn('signing_secret', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await untyped.schema.alterTable('subscriptions').addColumn('previous_signing_secret', 'text').execute();
  await untyped.schema.alterTable('subscriptions').addColumn('secret_rotated', 'bigint').execute();
  for (;;) {
    const rows = await db.selectFrom('subscriptions').select('uuid').where('signing_secret', '=', '').limit(PAGE).execute();
    for (const { uuid } of rows) {
      await db
        .updateTable('subscriptions')
        .set({ signing_secret: `whsec_${randomBytes(32).toString('base64')}` })
        .where('uuid', '=', uuid)
        .execute();
    }
    if (rows.length < PAGE) return;
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const column of ['secret_rotated', 'previous_signing_secret', 'signing_secret'])
    await db.schema.alterTable('subscriptions').dropColumn(column).execute();
}
