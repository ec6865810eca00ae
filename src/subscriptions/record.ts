/**
 * A subscription as the API shows it to its owner: exactly the fields of the specification, in
 * its order, timestamps formatted, and `auth` opened and echoed as supplied, but for the secrets
 * that are never shown again (masked-secrets.ts).
 */
import type { Keyring } from '../config/keyring.js';
import type { SubscriptionRow } from '../db/tables.js';
import { formatTimestamp } from '../time/clock.js';
import { COLUMN_FIELDS, type ColumnFieldName, type Extensions, RECORD_FIELDS, type SubscriptionRecord } from './fields.js';
import { maskedAuth } from './masked-secrets.js';
import { openAuth } from './secret-box.js';

/** The `version` label of records this code writes. */
export const RECORD_VERSION = 'v0.1';

export { RECORD_FIELDS, type SubscriptionRecord } from './fields.js';

export function toRecord(row: SubscriptionRow, secretKey: Keyring | null): SubscriptionRecord {
  const values: SubscriptionRecord = {
    ...columnValues(row),
    user: row.owner,
    uuid: row.uuid,
    name: row.name,
    jsonpath: row.jsonpath,
    target_url: row.delivery === 'pull' ? null : row.target_url,
    auth: maskedAuth(openAuth(row.auth, secretKey)),
    extensions: JSON.parse(row.extensions) as Extensions,
    created: formatTimestamp(row.created),
    updated: formatTimestamp(row.updated),
    deleted: row.deleted === null ? null : formatTimestamp(row.deleted),
    disabled: row.disabled === null ? null : formatTimestamp(row.disabled),
    version: row.version,
    error: row.error,
    delivery: row.delivery,
    notices: row.notices !== 0,
  };
  // In the declaration's order, the answers' (whose schema orders them over HTTP), wherever a field is made above.
  return Object.fromEntries(RECORD_FIELDS.map((name) => [name, values[name]])) as SubscriptionRecord;
}

type ColumnValues = Pick<SubscriptionRecord, ColumnFieldName>;

/** The fields stored as sent (fields.ts, column()), as their columns hold them. */
function columnValues(row: SubscriptionRow): ColumnValues {
  // Typed as the row's, assigned as the record's: a column field without a column of its name in
  // SubscriptionRow, or with one of another type, does not compile.
  const values: ColumnValues = Object.fromEntries(COLUMN_FIELDS.map((name) => [name, row[name]])) as Pick<SubscriptionRow, ColumnFieldName>;
  return values;
}
