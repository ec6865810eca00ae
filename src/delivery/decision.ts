/**
 * What a target's answer to one POST means, in the terms of runners/after-attempt.ts (which
 * says what then happens to the row): pure, over plain data, so every case is tested without a
 * database or a target (test/delivery/decision.test.ts).
 *
 * - 2xx: accepted (delivered).
 * - 408, 425, 429, 5xx, and no answer at all (refused, reset, time-out, DNS): later, when
 *   Retry-After asks for later; once the retry schedule is exhausted the delivery fails and the
 *   subscription is disabled.
 * - Any other status (3xx: redirects are not followed; 4xx), a refused address, an unusable
 *   URL: permanent, and the subscription is disabled with what the target said.
 * - No connection came free in time: untried.
 */
import { STATUS_CODES } from 'node:http';
import type { AttemptOutcome } from '../runners/after-attempt.js';
import type { TargetResponse } from './target-client.js';

/** What one try means for the delivery. `reason` is what the subscription's `error` says if it gives up. */
export type Verdict =
  { kind: 'delivered' } | { kind: 'retry'; retryAfterMs?: number; reason: string } | { kind: 'permanent'; reason: string };

/** What a target's answer (or its absence) comes to. */
export function outcomeOfResponse(response: TargetResponse): AttemptOutcome {
  if (response.busy) return { kind: 'untried' };
  const { status, error } = response;
  const verdict = status === null ? classifyNoAnswer(error ?? 'no answer', response.permanent) : classifyResponse(status, response);
  if (verdict.kind === 'delivered') return { kind: 'accepted', status: status! };
  if (verdict.kind === 'permanent') return { kind: 'permanent', status, error, reason: verdict.reason };
  const later = { kind: 'later' as const, status, error, reason: verdict.reason };
  return verdict.retryAfterMs === undefined ? later : { ...later, retryAfterMs: verdict.retryAfterMs };
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
