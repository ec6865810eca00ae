/**
 * What happens to rows after one attempt at them, at either stage: the one place that says
 * when a row is tried again, when it fails for good and disables its subscription, when it goes
 * back to the queue untried, and when it is cancelled. Pure, over plain data
 * (test/runners/after-attempt.test.ts); the runners only carry out what it says.
 *
 * Deliver stage (one row per attempt; every try is recorded as an attempt):
 * - accepted: delivered, the status kept as the target code;
 * - later: due again after the next delay of the retry schedule (later when the destination asked
 *   for later); once the schedule is exhausted the row fails and the subscription is disabled;
 * - permanent, refused: failed at once, and the subscription is disabled with the reason;
 * - waiting (pull): readable by the subscription's reader, `pending` with a cursor, no attempt
 *   recorded; the reader's acknowledgement (db/stores/pull.ts) makes it delivered, with its attempt.
 *
 * Policy stage (the rows of one (event, user), asked about together; only tries without a
 * decision are recorded):
 * - accepted (allowed): on to delivery, due already (in its place), its tries counted afresh;
 *   a row handed on in memory has this written with its first settlement at the deliver stage
 *   (settlementOf);
 * - refused (denied): recorded with the policy's status, never delivered;
 * - later, permanent: asked again later on the schedule, whose last delay repeats for ever: an
 *   outage of the policy service never disables a subscription or loses an event.
 *
 * At either stage, untried rows go back to the queue keeping their place and their attempts,
 * and cancelled rows (their subscription deleted or disabled) are never tried. A row whose event
 * was purged went with it: nothing is settled of it (runner-core.ts).
 */
import type { AttemptRecord, MatchChange, Stage } from '../db/stores/matches.js';
import type { Settlement } from '../db/stores/match-queue.js';
import type { MatchesTable } from '../db/tables.js';
import { nextDelayMs, type RetrySchedule } from './retry-schedule.js';

/** What the subscription's `error` field keeps of why it was disabled. */
export const ERROR_LIMIT = 1024;

/** What came of one attempt, in terms every destination (and the policy service) can say. */
export type AttemptOutcome =
  /** Taken: a target's 2xx, the policy's allow (status null: allowed without asking). */
  | { kind: 'accepted'; status: number | null }
  /** A definite no that is not a failure of the destination: the policy's deny. */
  | { kind: 'refused'; status: number }
  /**
   * Not now: an answer that asks for later (`status`), or no answer at all (`status` null).
   * `error`: what the attempt record keeps; `reason`: what the subscription's `error` says if
   * the schedule runs out.
   */
  | { kind: 'later'; status: number | null; error: string | null; reason: string; retryAfterMs?: number }
  /** Never: tried again it would fail the same way (a 4xx, a denied address, an unusable URL). */
  | { kind: 'permanent'; status: number | null; error: string | null; reason: string }
  /** Now waits for its reader to take it (pull): readable by cursor, no longer the runner's. */
  | { kind: 'waiting' }
  /** Not attempted (no connection came free in time, the lease ran short): not an attempt. */
  | { kind: 'untried' }
  /** Not to be attempted: its subscription was deleted or disabled. */
  | { kind: 'cancelled' };

/** When the attempt ended (µs), and how long it took. */
export interface Tried {
  at: number;
  durationMs: number;
}

/** What the rows of an attempt come to (for the metrics, and for what the runner does next). */
export type Result = 'delivered' | 'readable' | 'retry' | 'failed' | 'allowed' | 'denied' | 'untried' | 'cancelled';

export interface AfterAttempt {
  /** The same change for every row of the attempt; none when they go back untried. */
  change?: MatchChange;
  /** Recorded for each row, when the attempt is. */
  attempt?: Omit<AttemptRecord, 'matchUuid' | 'stage'>;
  /** Set when the subscription is disabled: what its `error` field says. */
  disable?: string;
  /** A delivery that failed (for now or for good): why, as its subscription's run of failures tells it. */
  failure?: string;
  result: Result;
}

/** Rows not attempted go back to the queue, keeping their place and their attempts. */
export const UNTRIED: AfterAttempt = { result: 'untried' };
/** Rows not to be attempted are cancelled, with no attempt recorded. */
export const CANCELLED: AfterAttempt = { change: { state: 'cancelled' }, result: 'cancelled' };

/** `rows`: the rows of the attempt (one for a delivery; an (event, user)'s for a policy question). */
export function afterAttempt(
  stage: Stage,
  rows: ReadonlyArray<Pick<MatchesTable, 'attempts'>>,
  outcome: AttemptOutcome,
  tried: Tried,
  schedule: RetrySchedule,
): AfterAttempt {
  if (outcome.kind === 'untried') return UNTRIED;
  if (outcome.kind === 'cancelled') return CANCELLED;
  // Only a destination gives this; a policy answer never does.
  if (outcome.kind === 'waiting') return { change: { state: 'pending' }, result: 'readable' };
  return stage === 'deliver' ? afterDelivery(rows, outcome, tried, schedule) : afterPolicy(rows, outcome, tried, schedule);
}

type Attempted = Exclude<AttemptOutcome, { kind: 'untried' } | { kind: 'cancelled' } | { kind: 'waiting' }>;

function afterDelivery(
  rows: ReadonlyArray<Pick<MatchesTable, 'attempts'>>,
  outcome: Attempted,
  { at, durationMs }: Tried,
  schedule: RetrySchedule,
): AfterAttempt {
  const { status } = outcome;
  const attempt = { at, status, error: 'error' in outcome ? outcome.error : null, durationMs };
  // The ELM target code is the latest status: an attempt without one leaves it be.
  const targetCode = status ?? undefined;
  if (outcome.kind === 'accepted') return { change: { state: 'delivered', targetCode, attempts: 'count' }, attempt, result: 'delivered' };
  const attempts = Math.max(...rows.map((r) => r.attempts));
  const said = (outcome.kind === 'refused' ? `refused with ${outcome.status}` : outcome.reason).slice(0, ERROR_LIMIT);
  const delayMs =
    outcome.kind === 'later' ? nextDelayMs(attempts + 1, schedule.delaysMs, schedule.random, outcome.retryAfterMs) : undefined;
  if (delayMs !== undefined)
    return {
      change: { state: 'deliver', due: at + delayMs * 1000, targetCode, attempts: 'count' },
      attempt,
      failure: said,
      result: 'retry',
    };
  const reason = (outcome.kind === 'later' ? `gave up after ${attempts + 1} attempts: ${said}` : said).slice(0, ERROR_LIMIT);
  return { change: { state: 'failed', targetCode, attempts: 'count' }, attempt, disable: reason, failure: said, result: 'failed' };
}

function afterPolicy(
  rows: ReadonlyArray<Pick<MatchesTable, 'attempts'>>,
  outcome: Attempted,
  { at, durationMs }: Tried,
  schedule: RetrySchedule,
): AfterAttempt {
  if (outcome.kind === 'accepted') {
    // Due already (its policy call was): it keeps its place. `attempts` counted policy tries so
    // far; from here on it counts delivery tries.
    return { change: { state: 'deliver', policyCode: outcome.status, attempts: 'reset' }, result: 'allowed' };
  }
  if (outcome.kind === 'refused') return { change: { state: 'denied', policyCode: outcome.status }, result: 'denied' };
  const tries = Math.min(Math.max(...rows.map((r) => r.attempts)) + 1, schedule.delaysMs.length);
  const delayMs = nextDelayMs(tries, schedule.delaysMs, schedule.random) ?? 0;
  return {
    change: { state: 'policy', due: at + delayMs * 1000, attempts: 'count' },
    attempt: { at, status: outcome.status, error: outcome.error, durationMs },
    result: 'retry',
  };
}

/** Whose destination an attempt went to. */
export interface AttemptedFor {
  uuid: string;
  /** When the attempt ended. */
  at: number;
  /**
   * Whether its owner hears of the subscription failing or being disabled by it: not when it
   * delivered the service's own event (an operational event), which would tell of itself for ever.
   */
  tell: boolean;
}

/** What settlementOf needs of a row. */
export type SettledRow = Pick<MatchesTable, 'uuid' | 'state' | 'policy_code'>;

/**
 * The settlement of `after` for the rows of one attempt of `subscription`: the change, the
 * attempts, the disabling and the run of failures, or the release. A row the policy stage
 * handed on to delivery is still `policy` in the database (policy/runner.ts): its allowance is
 * written with whatever comes of it first, in the same change (see withAllowance).
 */
export function settlementOf(stage: Stage, rows: readonly SettledRow[], after: AfterAttempt, subscription?: AttemptedFor): Settlement {
  const { change, attempt, disable, failure, result } = after;
  const handedOn = (row: SettledRow) => stage === 'deliver' && row.state === 'policy';
  const recorded = rows.filter((row) => !handedOn(row)).map((row) => row.uuid);
  const allowances = rows.filter(handedOn).map((row) => ({ uuid: row.uuid, change: withAllowance(change, row.policy_code) }));
  if (change === undefined) return { changes: allowances, attempts: [], disable: [], release: recorded };
  const counted = stage === 'deliver' && subscription?.tell === true && (result === 'delivered' || failure !== undefined);
  return {
    changes: [...recorded.map((uuid) => ({ uuid, change })), ...allowances],
    attempts: attempt === undefined ? [] : rows.map(({ uuid: matchUuid }) => ({ matchUuid, stage, ...attempt })),
    disable:
      disable === undefined || subscription === undefined
        ? []
        : [{ subscription: subscription.uuid, reason: disable, at: subscription.at, tell: subscription.tell }],
    runs: counted ? [{ subscription: subscription.uuid, failed: failure !== undefined, error: failure }] : [],
  };
}

/**
 * `change` with the policy's allowance written in: its code, and the row's tries counted from
 * the allowance. Given back untried (no change), the row is allowed and waits in its place.
 */
export function withAllowance(change: MatchChange | undefined, policyCode: number | null): MatchChange {
  if (change === undefined) return { state: 'deliver', policyCode, attempts: 'reset' };
  return { ...change, policyCode, attempts: change.attempts === 'count' ? 'first' : 'reset' };
}
