/**
 * The subscriptions table: the only code that reads or writes it.
 */
import { type Kysely, type QueryCreator, sql, type UpdateObject, type UpdateQueryBuilder } from 'kysely';
import { chunks } from '../chunks.js';
import type { Capabilities } from '../connect.js';
import { inOneRoundTrip } from '../postgres-round-trip.js';
import { notificationOf } from '../subscription-notifications.js';
import type { Database, SubscriptionRow } from '../tables.js';

/** A committed write, as those who keep copies of subscriptions (the matcher) hear of it. */
export type SubscriptionChange = { kind: 'upsert'; row: SubscriptionRow } | { kind: 'delete'; uuid: string };

/**
 * What an update may set: every column but those fixed once created and those only their own
 * writes set (the signing secrets, `deleted`, `updated`), so that a new column needs no entry here.
 */
export type SubscriptionChanges = Partial<
  Omit<
    SubscriptionRow,
    | 'uuid'
    | 'owner'
    | 'delivery'
    | 'version'
    | 'created'
    | 'updated'
    | 'deleted'
    | 'signing_secret'
    | 'previous_signing_secret'
    | 'secret_rotated'
  >
>;

/*
 * Every write takes the backend's capabilities: where instances share the database, the others
 * hear of the write once it commits (subscription-notifications.ts), as part of the write.
 */

export async function insertSubscription(db: Kysely<Database>, capabilities: Capabilities, row: SubscriptionRow): Promise<void> {
  await insertSubscriptions(db, capabilities, [row]);
}

/** Both databases take at least 32,766 parameters a statement; a subscription has 21 columns. */
export const SUBSCRIPTION_ROWS_PER_STATEMENT = 1_000;

/** New subscriptions, in as few statements as the parameter limit allows. */
export async function insertSubscriptions(
  db: Kysely<Database>,
  capabilities: Capabilities,
  rows: readonly SubscriptionRow[],
): Promise<void> {
  for (const chunk of chunks(rows, SUBSCRIPTION_ROWS_PER_STATEMENT)) {
    const insert = (qb: QueryCreator<Database>) => qb.insertInto('subscriptions').values(chunk);
    if (!capabilities.notify) await insert(db).execute();
    else
      await db
        .with('written', (qb) => insert(qb).returning('uuid'))
        .selectFrom('written')
        .select(notificationOf('written.uuid'))
        .execute();
  }
}

/** The row a write returns, with the other instances told of it (on PostgreSQL) in the same statement. */
async function writtenRow(
  db: Kysely<Database>,
  capabilities: Capabilities,
  write: (qb: QueryCreator<Database>) => UpdateQueryBuilder<Database, 'subscriptions', 'subscriptions', SubscriptionRow>,
): Promise<SubscriptionRow | undefined> {
  if (!capabilities.notify) return write(db).executeTakeFirst();
  const told = await db.with('written', write).selectFrom('written').selectAll().select(notificationOf('written.uuid')).executeTakeFirst();
  if (told === undefined) return undefined;
  const { notified: _, ...row } = told;
  return row;
}

/** A live (not deleted) subscription of `owner`; anything else is as good as absent. */
export async function findLiveSubscription(db: Kysely<Database>, owner: string, uuid: string): Promise<SubscriptionRow | undefined> {
  return db
    .selectFrom('subscriptions')
    .selectAll()
    .where('uuid', '=', uuid)
    .where('owner', '=', owner)
    .where('deleted', 'is', null)
    .executeTakeFirst();
}

/**
 * Whether `owner`'s live subscription is disabled (undefined: there is none), held (PostgreSQL:
 * the row locked until the transaction ends) so that a write after it in the transaction knows
 * what it changed.
 */
export async function heldDisabledState(
  db: Kysely<Database>,
  capabilities: Capabilities,
  owner: string,
  uuid: string,
): Promise<{ disabled: number | null } | undefined> {
  const query = db
    .selectFrom('subscriptions')
    .select('disabled')
    .where('uuid', '=', uuid)
    .where('owner', '=', owner)
    .where('deleted', 'is', null);
  return (capabilities.rowLocks ? query.forUpdate() : query).executeTakeFirst();
}

/** The owner's live subscriptions, oldest first. */
export async function listLiveSubscriptions(
  db: Kysely<Database>,
  owner: string,
  page: { limit: number; offset: number },
): Promise<SubscriptionRow[]> {
  return db
    .selectFrom('subscriptions')
    .selectAll()
    .where('owner', '=', owner)
    .where('deleted', 'is', null)
    .orderBy('created')
    .orderBy('uuid')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

/**
 * Keeps advisory locks on owners apart from any other use of them: PostgreSQL's two-key advisory
 * locks never conflict with its one-key ones (Kysely's migration lock), and this first key is
 * ours alone.
 */
const OWNER_LOCK_CLASS = 0x6f776e72; // "ownr"

/**
 * Inserts those of `rows` that fit their owner's limit of `most` live subscriptions (counted
 * under the owners' locks, each row counting for the next), and says which, in order; all of
 * them with no limit.
 */
export async function insertWithinLimit(
  tx: Kysely<Database>,
  capabilities: Capabilities,
  rows: readonly SubscriptionRow[],
  most: number | 'off',
): Promise<boolean[]> {
  if (most === 'off') {
    await insertSubscriptions(tx, capabilities, rows);
    return rows.map(() => true);
  }
  if (capabilities.roundTrips) return insertWithinLimitInOneRoundTrip(tx, rows, most);
  // SQLite: its write transaction holds the whole database, so the count stays true until it ends.
  const held = await liveCounts(tx, [...new Set(rows.map((row) => row.owner))]);
  const admitted = rows.map((row) => {
    const count = held.get(row.owner) ?? 0;
    if (count >= most) return false;
    held.set(row.owner, count + 1);
    return true;
  });
  await insertSubscriptions(
    tx,
    capabilities,
    rows.filter((_, i) => admitted[i]),
  );
  return admitted;
}

/** How many live subscriptions (deleted ones are not; disabled ones are) each of `owners` holds. */
export async function liveCounts(db: Kysely<Database>, owners: readonly string[]): Promise<Map<string, number>> {
  if (owners.length === 0) return new Map();
  const counted = await db
    .selectFrom('subscriptions')
    .select((eb) => ['owner', eb.fn.countAll<number | bigint>().as('live')])
    .where('owner', 'in', owners)
    .where('deleted', 'is', null)
    .groupBy('owner')
    .execute();
  return new Map(counted.map((row) => [row.owner, Number(row.live)]));
}

/**
 * PostgreSQL: two statements in one round trip and one transaction. The first locks each owner
 * (a transaction-scoped advisory lock on a hash of the schema and the owner, taken in one order
 * so that two transactions cannot wait on each other). The second, whose snapshot is taken once
 * it holds the locks and so sees what their last holder committed, counts each owner's live
 * subscriptions and inserts the rows that fit, each counting for the next of its owner, telling
 * the other instances of each. The rows travel as one JSON parameter, read as rows of the table.
 */
async function insertWithinLimitInOneRoundTrip(db: Kysely<Database>, rows: readonly SubscriptionRow[], most: number): Promise<boolean[]> {
  const owners = JSON.stringify([...new Set(rows.map((row) => row.owner))]);
  const lock = sql`
    select pg_advisory_xact_lock(${OWNER_LOCK_CLASS}, key)
    from (select distinct hashtext(current_schema() || '/' || owner) as key from jsonb_array_elements_text(${owners}::jsonb) as owner order by key) as keys
  `;
  const insert = sql<{ uuid: string }>`
    with candidate as (
      select r, row_number() over (partition by r.owner order by e.ord) as nth
      from jsonb_array_elements(${JSON.stringify(rows)}::jsonb) with ordinality as e(doc, ord),
        lateral jsonb_populate_record(null::subscriptions, e.doc) as r
    ),
    counted as (
      select owner, count(*) as live from subscriptions
      where deleted is null and owner = any(array(select jsonb_array_elements_text(${owners}::jsonb)))
      group by owner
    ),
    written as (
      insert into subscriptions
      select (c.r).* from candidate c left join counted n on n.owner = (c.r).owner
      where coalesce(n.live, 0) + c.nth <= ${most}
      returning uuid
    )
    select written.uuid, ${notificationOf('written.uuid')} from written
  `;
  const [, written] = await inOneRoundTrip(db, [lock.compile(db), insert.compile(db)]);
  const inserted = new Set((written as Array<{ uuid: string }>).map((row) => row.uuid));
  return rows.map((row) => inserted.has(row.uuid));
}

export type MatchableRow = Pick<SubscriptionRow, 'uuid' | 'owner' | 'jsonpath' | 'dialect' | 'deleted' | 'disabled' | 'notices'>;

/**
 * Every live subscription of every owner, a page at a time, with only what the matcher needs:
 * what a reload reads (the start-up load is live-subscriptions-load.ts). Read whole, 100,000
 * rows with credentials and extensions were
 * 200 MB of garbage at once, and the process kept the memory. The pages are of every row in
 * primary-key order, the deleted ones left out here rather than in the query: PostgreSQL,
 * without statistics of the table, answered `deleted is null` through the partial index of live
 * subscriptions by owner and sorted each page out of all of them (1,000,000 rows: 124 s).
 */
export async function* liveSubscriptionPages(db: Kysely<Database>, pageSize = 5_000): AsyncGenerator<MatchableRow[]> {
  let after = '';
  for (;;) {
    const page = await db
      .selectFrom('subscriptions')
      .select(['uuid', 'owner', 'jsonpath', 'dialect', 'deleted', 'disabled', 'notices'])
      .where('uuid', '>', after)
      .orderBy('uuid')
      .limit(pageSize)
      .execute();
    const live = page.filter((row) => row.deleted === null);
    if (live.length > 0) yield live;
    if (page.length < pageSize) return;
    after = page.at(-1)!.uuid;
  }
}

export type StoredSecrets = Pick<SubscriptionRow, 'uuid' | 'auth' | 'signing_secret' | 'previous_signing_secret'>;

/**
 * Subscriptions (deleted ones too: they keep their credentials) with a secret stored without
 * `sealedPrefix`, a page at a time in uuid order after `after`.
 */
export async function unsealedSecrets(db: Kysely<Database>, sealedPrefix: string, after: string, limit: number): Promise<StoredSecrets[]> {
  const unsealed = `${sealedPrefix}%`;
  return db
    .selectFrom('subscriptions')
    .select(['uuid', 'auth', 'signing_secret', 'previous_signing_secret'])
    .where('uuid', '>', after)
    .where((eb) =>
      eb.or([
        eb('auth', 'not like', unsealed),
        eb('signing_secret', 'not like', unsealed),
        eb.and([eb('previous_signing_secret', 'is not', null), eb('previous_signing_secret', 'not like', unsealed)]),
      ]),
    )
    .orderBy('uuid')
    .limit(limit)
    .execute();
}

/** Every subscription's secrets (deleted ones too), a page at a time in uuid order after `after`. */
export async function storedSecrets(db: Kysely<Database>, after: string, limit: number): Promise<StoredSecrets[]> {
  return db
    .selectFrom('subscriptions')
    .select(['uuid', 'auth', 'signing_secret', 'previous_signing_secret'])
    .where('uuid', '>', after)
    .orderBy('uuid')
    .limit(limit)
    .execute();
}

/** One subscription's secrets, as stored now; undefined once it is gone. */
export async function storedSecretsOf(db: Kysely<Database>, uuid: string): Promise<StoredSecrets | undefined> {
  return db
    .selectFrom('subscriptions')
    .select(['uuid', 'auth', 'signing_secret', 'previous_signing_secret'])
    .where('uuid', '=', uuid)
    .executeTakeFirst();
}

/**
 * Stores `sealed` in place of `stored` only if the row still holds `stored` (another instance,
 * or a write, may have replaced it meanwhile). The secrets are the same, so `updated` stays and
 * no one needs telling.
 */
export async function replaceStoredSecrets(db: Kysely<Database>, stored: StoredSecrets, sealed: StoredSecrets): Promise<boolean> {
  const result = await db
    .updateTable('subscriptions')
    .set({ auth: sealed.auth, signing_secret: sealed.signing_secret, previous_signing_secret: sealed.previous_signing_secret })
    .where('uuid', '=', stored.uuid)
    .where('auth', '=', stored.auth)
    .where('signing_secret', '=', stored.signing_secret)
    .where((eb) =>
      stored.previous_signing_secret === null
        ? eb('previous_signing_secret', 'is', null)
        : eb('previous_signing_secret', '=', stored.previous_signing_secret),
    )
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** `at`, or one microsecond past the row's `updated` if that is later: `updated` only moves forward. */
function nextUpdated(at: number) {
  return sql<number>`case when updated >= ${at} then updated + 1 else ${at} end`;
}

/**
 * Applies `changes` to a live subscription and moves `updated` forward, in one statement, so
 * that two instances updating at once cannot both write the same `updated`.
 */
export async function updateSubscription(
  db: Kysely<Database>,
  capabilities: Capabilities,
  owner: string,
  uuid: string,
  changes: SubscriptionChanges,
  at: number,
): Promise<SubscriptionRow | undefined> {
  return updateLive(db, capabilities, owner, uuid, { ...changes, updated: nextUpdated(at) });
}

/**
 * A new signing secret (sealed as the caller stores it); the one it replaces is kept, with
 * when, for the overlap. `updated` moves, so that other instances hear of it as of any write.
 */
export async function rotateSigningSecret(
  db: Kysely<Database>,
  capabilities: Capabilities,
  owner: string,
  uuid: string,
  secret: string,
  at: number,
): Promise<SubscriptionRow | undefined> {
  return updateLive(db, capabilities, owner, uuid, {
    // The right-hand side reads the row as it was: the previous secret is the one replaced.
    previous_signing_secret: sql.ref('signing_secret'),
    signing_secret: secret,
    secret_rotated: at,
    updated: nextUpdated(at),
  });
}

/** One statement on the owner's live subscription; the other instances are told of the write. */
async function updateLive(
  db: Kysely<Database>,
  capabilities: Capabilities,
  owner: string,
  uuid: string,
  set: UpdateObject<Database, 'subscriptions'>,
): Promise<SubscriptionRow | undefined> {
  return writtenRow(db, capabilities, (qb) =>
    qb
      .updateTable('subscriptions')
      .set(set)
      .where('uuid', '=', uuid)
      .where('owner', '=', owner)
      .where('deleted', 'is', null)
      .returningAll(),
  );
}

/** Soft delete: the row stays (the event log refers to it) but never matches again. */
export async function deleteSubscription(
  db: Kysely<Database>,
  capabilities: Capabilities,
  owner: string,
  uuid: string,
  at: number,
): Promise<SubscriptionRow | undefined> {
  return updateLive(db, capabilities, owner, uuid, { deleted: nextUpdated(at), updated: nextUpdated(at) });
}

/** Subscriptions by uuid, deleted and disabled ones included (the caller decides). */
export async function subscriptionsByUuid(db: Kysely<Database>, uuids: readonly string[]): Promise<Map<string, SubscriptionRow>> {
  if (uuids.length === 0) return new Map();
  const rows = await db
    .selectFrom('subscriptions')
    .selectAll()
    .where('uuid', 'in', [...new Set(uuids)])
    .execute();
  return new Map(rows.map((row) => [row.uuid, row]));
}

/** Disabled by the service: its target failed for good. Returns the row when this disabled it. */
export async function disableSubscription(
  db: Kysely<Database>,
  capabilities: Capabilities,
  uuid: string,
  error: string,
  at: number,
): Promise<SubscriptionRow | undefined> {
  return writtenRow(db, capabilities, (qb) =>
    qb
      .updateTable('subscriptions')
      .set({ disabled: nextUpdated(at), updated: nextUpdated(at), error })
      .where('uuid', '=', uuid)
      .where('deleted', 'is', null)
      .where('disabled', 'is', null)
      .returningAll(),
  );
}

/** Subscriptions written (created, updated, deleted, disabled) at or after `since`. */
export async function subscriptionsUpdatedSince(db: Kysely<Database>, since: number): Promise<SubscriptionRow[]> {
  return db.selectFrom('subscriptions').selectAll().where('updated', '>=', since).execute();
}

/**
 * Every subscription, deleted ones too, whole, a page at a time in primary-key order: what
 * a reload reads when the rows kept in memory (the delivery runner's) must follow as well as
 * the matcher (which needs only `liveSubscriptionPages`).
 */
export async function* subscriptionPages(db: Kysely<Database>, pageSize = 1_000): AsyncGenerator<SubscriptionRow[]> {
  let after = '';
  for (;;) {
    const page = await db.selectFrom('subscriptions').selectAll().where('uuid', '>', after).orderBy('uuid').limit(pageSize).execute();
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    after = page.at(-1)!.uuid;
  }
}
