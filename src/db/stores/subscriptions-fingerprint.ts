/**
 * SQLite: what the subscriptions table held at one moment, cheaply, so that a server can tell
 * whether another process's commit changed subscriptions (matching/other-process-commits.ts),
 * and read only the rows inserted since when that is all it did.
 */
import { type Kysely, sql } from 'kysely';
import { DATA_VERSION } from '../data-version.js';
import type { Database, SubscriptionRow } from '../tables.js';

/**
 * SQLite: what any write to the table moves, whoever makes it (see subscriptionsState). A write
 * that changes none of it goes unseen: an expression edited by hand with `updated` left as it
 * was, or `reseal`, which seals the same secrets again (what this server holds still opens with
 * its keys).
 */
export interface SubscriptionsFingerprint {
  /** Rows, deleted ones included: an insert or a delete moves it. */
  readonly rows: number;
  /** The highest rowid (0: none): a row inserted later has a higher one, unless the highest were deleted. */
  readonly lastRowid: number;
  /**
   * Every row's `updated` modulo 2^32, summed modulo 2^52 (exact in a JS number): every write of
   * the service moves its row's `updated`, and any move changes the sum. `max(updated)` would
   * miss one that stays below another row's `updated`: behind an imported time in the future
   * (read in the wrong time zone), or after the clock was set back.
   */
  readonly updatedSum: number;
  /** Rows deleted, and disabled: also when set or cleared by hand without `updated`. */
  readonly deleted: number;
  readonly disabled: number;
}

const UPDATED_PART = 2 ** 32;
const UPDATED_SUM_MODULUS = 2 ** 52;

/** SQLite: what the file held at one moment: the connection's data version, and the table's fingerprint. */
export interface SubscriptionsState {
  readonly dataVersion: number;
  readonly fingerprint: SubscriptionsFingerprint;
}

/**
 * SQLite: the table's fingerprint and the data version, in one statement, so that they are of
 * one moment. It reads every row (no index holds `updated`): 40 ms at 100,000 subscriptions
 * (see matching/other-process-commits.ts).
 */
export async function subscriptionsState(db: Kysely<Database>): Promise<SubscriptionsState> {
  const { rows } = await sql<{
    data_version: number;
    row_count: number;
    last_rowid: number;
    updated_sum: number;
    deleted: number;
    disabled: number;
  }>`
    select ${DATA_VERSION} as data_version, count(*) as row_count, coalesce(max(rowid), 0) as last_rowid,
      coalesce(sum(updated & ${sql.lit(UPDATED_PART - 1)}), 0) & ${sql.lit(UPDATED_SUM_MODULUS - 1)} as updated_sum,
      count(deleted) as deleted, count(disabled) as disabled
    from subscriptions
  `.execute(db);
  const row = rows[0]!;
  return {
    dataVersion: row.data_version,
    fingerprint: {
      rows: row.row_count,
      lastRowid: row.last_rowid,
      updatedSum: row.updated_sum,
      deleted: row.deleted,
      disabled: row.disabled,
    },
  };
}

/** A row with its SQLite rowid. */
export interface RowidRow {
  readonly rowid: number;
  readonly row: SubscriptionRow;
}

/**
 * SQLite: the rows whose rowid is above `after` and at most `upTo`, in rowid order, `limit` at
 * most: those inserted since the highest rowid was `after` (found through the rowid itself).
 */
export async function subscriptionsByRowid(db: Kysely<Database>, after: number, upTo: number, limit: number): Promise<RowidRow[]> {
  const rowid = sql<number>`rowid`;
  const rows = await db
    .selectFrom('subscriptions')
    .selectAll()
    .select(rowid.as('rowid'))
    .where(rowid, '>', after)
    .where(rowid, '<=', upTo)
    .orderBy(rowid)
    .limit(limit)
    .execute();
  return rows.map(({ rowid, ...row }) => ({ rowid, row }));
}

/** `fingerprint` with `rows` inserted: what subscriptionsFingerprint reads after their inserts, if nothing else was written. */
export function fingerprintWith(fingerprint: SubscriptionsFingerprint, rows: readonly RowidRow[]): SubscriptionsFingerprint {
  return fingerprintAdding(
    fingerprint,
    rows.map(({ rowid, row }) => ({ rowid, updated: row.updated, deleted: row.deleted, disabled: row.disabled })),
  );
}

export const EMPTY_FINGERPRINT: SubscriptionsFingerprint = { rows: 0, lastRowid: 0, updatedSum: 0, deleted: 0, disabled: 0 };

/** `fingerprint` with `rows` counted in; `updated` summed over them first: up to 2^21 values below 2^32 add up exactly in a JS number. */
export function fingerprintAdding(
  fingerprint: SubscriptionsFingerprint,
  rows: ReadonlyArray<Pick<SubscriptionRow, 'updated' | 'deleted' | 'disabled'> & { rowid: number }>,
): SubscriptionsFingerprint {
  let { lastRowid, deleted, disabled } = fingerprint;
  let updated = 0;
  for (const row of rows) {
    lastRowid = Math.max(lastRowid, row.rowid);
    updated += row.updated % UPDATED_PART;
    if (row.deleted !== null) deleted += 1;
    if (row.disabled !== null) disabled += 1;
  }
  return {
    rows: fingerprint.rows + rows.length,
    lastRowid,
    updatedSum: (fingerprint.updatedSum + updated) % UPDATED_SUM_MODULUS,
    deleted,
    disabled,
  };
}

export function sameFingerprint(a: SubscriptionsFingerprint, b: SubscriptionsFingerprint): boolean {
  return (
    a.rows === b.rows &&
    a.lastRowid === b.lastRowid &&
    a.updatedSum === b.updatedSum &&
    a.deleted === b.deleted &&
    a.disabled === b.disabled
  );
}
