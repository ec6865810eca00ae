/**
 * What one try at a delivery means, and what is recorded for it: pure, over plain data, so
 * every case is tested without a database or a target (test/delivery/decision.test.ts).
 *
 * - 2xx: delivered.
 * - 408, 425, 429, 5xx, and no answer at all (refused, reset, time-out, DNS): tried again on
 *   the retry schedule, later when Retry-After asks for later; once the schedule is exhausted
 *   the delivery fails and the subscription is disabled.
 * - Any other status (3xx: redirects are not followed; 4xx), a refused address, an unusable
 *   URL: fails at once, and the subscription is disabled with what the target said.
 */
import { STATUS_CODES } from 'node:http';
import type { MatchChange } from '../db/matches.js';
import type { MatchesTable } from '../db/tables.js';
import { nextDelayMs, type RetrySchedule } from '../routing/retry-schedule.js';
import type { TargetResponse } from './target-client.js';

/** What the subscription's `error` field keeps of a target's answer. */
export const ERROR_LIMIT = 1024;

/** What one try means for the delivery. `reason` is what the subscription's `error` says if it gives up. */
export type Verdict =
  { kind: 'delivered' } | { kind: 'retry'; retryAfterMs?: number; reason: string } | { kind: 'permanent'; reason: string };

/** A try that ended at `at` (µs). */
export type Try = TargetResponse & { at: number };

export interface DeliveryDecision {
  change: MatchChange;
  /** The attempt as recorded: every try is. */
  attempt: { at: number; status: number | null; error: string | null; durationMs: number };
  /** Set when the subscription is disabled: what its `error` field says. */
  disable?: string;
  outcome: 'delivered' | 'retry' | 'failed';
}

export function decideDelivery(row: Pick<MatchesTable, 'attempts'>, tried: Try, schedule: RetrySchedule): DeliveryDecision {
  const { at, status } = tried;
  const attempt = { at, status, error: tried.error, durationMs: tried.durationMs };
  // The ELM target code is the latest HTTP status: a try without one leaves it be.
  const targetCode = status ?? undefined;
  const verdict = status === null ? classifyNoAnswer(tried.error ?? 'no answer', tried.permanent) : classifyResponse(status, tried);
  if (verdict.kind === 'delivered') return { change: { state: 'delivered', targetCode, attempts: 'count' }, attempt, outcome: 'delivered' };
  const delayMs =
    verdict.kind === 'retry' ? nextDelayMs(row.attempts + 1, schedule.delaysMs, schedule.random, verdict.retryAfterMs) : undefined;
  if (delayMs !== undefined)
    return { change: { state: 'deliver', due: at + delayMs * 1000, targetCode, attempts: 'count' }, attempt, outcome: 'retry' };
  const reason = verdict.kind === 'retry' ? `gave up after ${row.attempts + 1} attempts: ${verdict.reason}` : verdict.reason;
  return { change: { state: 'failed', targetCode, attempts: 'count' }, attempt, disable: reason.slice(0, ERROR_LIMIT), outcome: 'failed' };
}

/** Statuses in 4xx that say "later", not "never". */
const RETRYABLE_CLIENT_ERRORS = new Set([408, 425, 429]);

/** What of an answer besides its status bears on the verdict. */
export type AnswerDetails = Partial<Pick<TargetResponse, 'retryAfterMs' | 'bodyExcerpt' | 'location'>>;

export function classifyResponse(status: number, { retryAfterMs, bodyExcerpt = '', location }: AnswerDetails = {}): Verdict {
  if (status >= 200 && status <= 299) return { kind: 'delivered' };
  if (RETRYABLE_CLIENT_ERRORS.has(status) || (status >= 500 && status <= 599)) {
    const reason = describeAnswer(status, '', bodyExcerpt);
    return retryAfterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', retryAfterMs, reason };
  }
  // Redirects are not followed: the new location could be a denied address (the
  // guard judged only the first), and the Authorization header would travel to
  // whatever host the target names. The owner should update target_url instead.
  const redirect = status >= 300 && status <= 399;
  const note = !redirect ? '' : location === undefined ? ' (redirects are not followed)' : ` to ${location} (redirects are not followed)`;
  return { kind: 'permanent', reason: describeAnswer(status, note, bodyExcerpt) };
}

/** A try that got no HTTP answer; permanent when none could ever come (a denied address, a bad URL). */
export function classifyNoAnswer(error: string, permanent: boolean): Verdict {
  return permanent ? { kind: 'permanent', reason: error } : { kind: 'retry', reason: error };
}

function describeAnswer(status: number, note: string, bodyExcerpt: string): string {
  const phrase = STATUS_CODES[status];
  const answer = `target answered ${status}${phrase === undefined ? '' : ` ${phrase}`}${note}`;
  const body = bodyExcerpt.trim();
  return body === '' ? answer : `${answer}: ${body}`;
}
