/**
 * The tables, as the rest of the code sees them. Timestamps are integers: microseconds since
 * the Unix epoch, UTC (exact in both databases, sortable, and JSON-safe up to year 2255).
 *
 * Glossary
 * - subscription (event match): a user's JSONPath and target; soft-deleted, never removed.
 * - event: a received CloudEvent, unique per (source, id).
 * - match (ELM, event log match): one subscription matched by one event; also the work queue:
 *   its `state` moves policy -> deliver -> delivered | denied | failed | cancelled.
 * - attempt: one try at delivering a match (or asking the policy service about it).
 * - lease: a claim on a match row until `locked_until`; an expired lease returns the row.
 */

/** A row of the subscriptions table. */
export interface SubscriptionRow {
  uuid: string;
  owner: string;
  name: string;
  jsonpath: string;
  /** The dialect the expression compiled in when it was written. */
  dialect: string;
  target_url: string;
  /** JSON text, or `v1:`-prefixed AES-256-GCM ciphertext when a secret key is configured. */
  auth: string;
  /** JSON text of an object of CloudEvents extension attributes. */
  extensions: string;
  /** `whsec_` + base64 of the Standard Webhooks key; sealed like `auth`. */
  signing_secret: string;
  /** The secret the last rotation replaced (sealed likewise); it still signs for a while after `secret_rotated`. */
  previous_signing_secret: string | null;
  secret_rotated: number | null;
  version: string;
  created: number;
  updated: number;
  deleted: number | null;
  disabled: number | null;
  error: string | null;
  /** Deliveries per second to the target at most; null: no limit. */
  rate_limit: number | null;
  /** Deliveries per minute the target allowed in its consent (WebHook-Allowed-Rate); null: no cap. Not part of the record. */
  allowed_rate: number | null;
}

export interface EventsTable {
  uuid: string;
  source: string;
  event_id: string;
  type: string;
  spec_version: string;
  /** The event in structured-mode JSON form. */
  body: string;
  received: number;
}

export type MatchState = 'policy' | 'deliver' | 'delivered' | 'denied' | 'failed' | 'cancelled';
/** States with work still to do: a policy call or a delivery. */
export const UNFINISHED_STATES: readonly MatchState[] = ['policy', 'deliver'];

export interface MatchesTable {
  uuid: string;
  event_uuid: string;
  subscription_uuid: string;
  owner: string;
  state: MatchState;
  policy_code: number | null;
  target_code: number | null;
  created: number;
  /** When the row is next due for its stage (policy call or delivery). */
  due: number;
  locked_until: number | null;
  locked_by: string | null;
  attempts: number;
  updated: number;
}

export interface AttemptsTable {
  uuid: string;
  match_uuid: string;
  stage: 'policy' | 'deliver';
  at: number;
  status: number | null;
  error: string | null;
  duration_ms: number;
}

export interface Database {
  subscriptions: SubscriptionRow;
  events: EventsTable;
  matches: MatchesTable;
  attempts: AttemptsTable;
}
