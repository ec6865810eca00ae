/**
 * A subscription as the API shows it to its owner: exactly the fields of the specification, in
 * its order, timestamps formatted, and `auth` opened and echoed as supplied.
 */
import type { Keyring } from '../config/keyring.js';
import type { DeliveryKind, SubscriptionRow } from '../db/tables.js';
import { formatTimestamp } from '../time/clock.js';
import type { Auth, Extensions } from './input.js';
import { openAuth } from './secret-box.js';

/** The `version` label of records this code writes. */
export const RECORD_VERSION = 'v0.1';

export interface SubscriptionRecord {
  user: string;
  uuid: string;
  name: string;
  jsonpath: string;
  /** null for a pull subscription. */
  target_url: string | null;
  auth: Auth;
  extensions: Extensions;
  created: string;
  updated: string;
  deleted: string | null;
  disabled: string | null;
  version: string;
  error: string | null;
  rate_limit: number | null;
  /** `push` (to target_url) or `pull` (read by cursor). */
  delivery: DeliveryKind;
  /** Whether the service's notices about the owner's other subscriptions (operational events) may match it too. */
  notices: boolean;
}

export const RECORD_FIELDS: ReadonlyArray<keyof SubscriptionRecord> = [
  'user',
  'uuid',
  'name',
  'jsonpath',
  'target_url',
  'auth',
  'extensions',
  'created',
  'updated',
  'deleted',
  'disabled',
  'version',
  'error',
  'rate_limit',
  'delivery',
  'notices',
];

export function toRecord(row: SubscriptionRow, secretKey: Keyring | null): SubscriptionRecord {
  return {
    user: row.owner,
    uuid: row.uuid,
    name: row.name,
    jsonpath: row.jsonpath,
    target_url: row.delivery === 'pull' ? null : row.target_url,
    auth: openAuth(row.auth, secretKey),
    extensions: JSON.parse(row.extensions) as Extensions,
    created: formatTimestamp(row.created),
    updated: formatTimestamp(row.updated),
    deleted: row.deleted === null ? null : formatTimestamp(row.deleted),
    disabled: row.disabled === null ? null : formatTimestamp(row.disabled),
    version: row.version,
    error: row.error,
    rate_limit: row.rate_limit,
    delivery: row.delivery,
    notices: row.notices !== 0,
  };
}
