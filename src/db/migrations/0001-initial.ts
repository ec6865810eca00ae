/**
 * The whole schema of version 1. Frozen: a later change is a new migration, and this file
 * imports nothing from the application (only Kysely's schema builder).
 */
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('subscriptions')
    .addColumn('uuid', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('jsonpath', 'text', (c) => c.notNull())
    .addColumn('dialect', 'varchar(16)', (c) => c.notNull())
    .addColumn('target_url', 'text', (c) => c.notNull())
    .addColumn('auth', 'text', (c) => c.notNull())
    .addColumn('extensions', 'text', (c) => c.notNull())
    .addColumn('version', 'varchar(16)', (c) => c.notNull())
    .addColumn('created', 'bigint', (c) => c.notNull())
    .addColumn('updated', 'bigint', (c) => c.notNull())
    .addColumn('deleted', 'bigint')
    .addColumn('disabled', 'bigint')
    .addColumn('error', 'text')
    .execute();
  // GET /eventmatch: the caller's live subscriptions, oldest first.
  await db.schema.createIndex('subscriptions_owner_created').on('subscriptions').columns(['owner', 'created']).execute();

  await db.schema
    .createTable('events')
    .addColumn('uuid', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('spec_version', 'varchar(8)', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('received', 'bigint', (c) => c.notNull())
    .execute();
  // De-duplication on (source, id), and eventget/eventpurge by date.
  await db.schema.createIndex('events_source_event_id').unique().on('events').columns(['source', 'event_id']).execute();
  await db.schema.createIndex('events_received').on('events').column('received').execute();

  await db.schema
    .createTable('matches')
    .addColumn('uuid', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('event_uuid', 'varchar(36)', (c) => c.notNull().references('events.uuid').onDelete('cascade'))
    .addColumn('subscription_uuid', 'varchar(36)', (c) => c.notNull().references('subscriptions.uuid'))
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('policy_code', 'integer')
    .addColumn('target_code', 'integer')
    .addColumn('created', 'bigint', (c) => c.notNull())
    .addColumn('due', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('locked_by', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated', 'bigint', (c) => c.notNull())
    .execute();
  // The queue: due rows of a stage, oldest due first.
  await db.schema.createIndex('matches_state_due').on('matches').columns(['state', 'due']).execute();
  await db.schema.createIndex('matches_event').on('matches').column('event_uuid').execute();
  // GET /eventmatch/{uuid}/deliveries, newest first; cancelling a subscription's pending work.
  await db.schema.createIndex('matches_subscription_created').on('matches').columns(['subscription_uuid', 'created']).execute();

  await db.schema
    .createTable('attempts')
    .addColumn('uuid', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('match_uuid', 'varchar(36)', (c) => c.notNull().references('matches.uuid').onDelete('cascade'))
    .addColumn('stage', 'varchar(8)', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('status', 'integer')
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('attempts_match').on('attempts').columns(['match_uuid', 'at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['attempts', 'matches', 'events', 'subscriptions']) await db.schema.dropTable(table).execute();
}
