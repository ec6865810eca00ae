/**
 * The tables, as the rest of the code sees them. Timestamps are integers: microseconds since
 * the Unix epoch, UTC (exact in both databases, sortable, and JSON-safe up to year 2255).
 *
 * Glossary
 * - subscription (event match): a user's JSONPath and target; soft-deleted, never removed. A pull
 *   subscription has no target: its events are read by cursor (GET /eventmatch/{uuid}/events).
 * - event: a received CloudEvent, unique per (source, id).
 * - match (ELM, event log match): one subscription matched by one event; also the work queue:
 *   its `state` moves policy -> deliver -> delivered | denied | failed | cancelled; for a pull
 *   subscription deliver -> pending (readable by its cursor) -> delivered (read on) | expired.
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
  /** `push`: POSTed to target_url; `pull`: read by cursor. */
  delivery: DeliveryKind;
  /**
   * Where push deliveries go. A pull subscription stores '' (the column stays NOT NULL, so that
   * adding pull needed no rebuild of the SQLite table); the record shows it as null.
   */
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
  /** 1: also matched by the service's notices about the owner's other subscriptions (operational events); 0: not. The record shows a boolean. */
  notices: number;
}

export type DeliveryKind = 'push' | 'pull';

export interface EventsTable {
  uuid: string;
  source: string;
  event_id: string;
  type: string;
  spec_version: string;
  /** The event in structured-mode JSON form. */
  body: string;
  received: number;
  /**
   * Its receive span (W3C traceparent), the parent of its policy calls' and delivery attempts'
   * spans; null when received without tracing. Absent from rows written by code that does not
   * trace (the storage probe).
   */
  traceparent?: string | null;
}

export type MatchState = 'policy' | 'deliver' | 'pending' | 'delivered' | 'denied' | 'failed' | 'cancelled' | 'expired';
/** States with work still to do for the runners: a policy call or a delivery. */
export const UNFINISHED_STATES: readonly MatchState[] = ['policy', 'deliver'];
/**
 * States a subscription still waits on: the runners' work, and pull rows readable but not read
 * yet (`pending`, no runner's work). Retention keeps their events; deleting or disabling the
 * subscription cancels them.
 */
export const OPEN_STATES: readonly MatchState[] = [...UNFINISHED_STATES, 'pending'];

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
  /**
   * A pull row's place in its subscription's reading order, set when it becomes readable; null
   * for push rows and rows not readable yet. Increasing in commit order (see pull-cursor.ts).
   */
  cursor: number | null;
}

export interface AttemptsTable {
  uuid: string;
  match_uuid: string;
  /** `pull`: the reader acknowledged it by reading on. */
  stage: 'policy' | 'deliver' | 'pull';
  at: number;
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/** One row (id 1): the last cursor given to a readable pull row, of any subscription. */
export interface PullCursorTable {
  id: number;
  last: number;
}

/** A subscription whose deliveries are failing: how many failed in a row (none while they succeed). */
export interface FailureRunsTable {
  subscription_uuid: string;
  failures: number;
}

export interface Database {
  subscriptions: SubscriptionRow;
  events: EventsTable;
  matches: MatchesTable;
  attempts: AttemptsTable;
  pull_cursor: PullCursorTable;
  failure_runs: FailureRunsTable;
}
