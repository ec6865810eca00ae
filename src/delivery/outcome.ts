import { STATUS_CODES } from 'node:http';
import { describeNetworkError } from './network-error.js';

/**
 * What one try means for the delivery. `reason` is what the subscription's
 * `error` field says if the delivery gives up.
 */
export type Outcome =
  | { kind: 'delivered' }
  | { kind: 'retry'; retryAfterMs?: number; reason: string }
  | { kind: 'permanent'; reason: string };

/** Statuses in 4xx that say "later", not "never". */
const RETRYABLE_CLIENT_ERRORS = new Set([408, 425, 429]);

export function classifyResponse(status: number, retryAfterMs?: number, bodyExcerpt = ''): Outcome {
  if (status >= 200 && status <= 299) return { kind: 'delivered' };
  if (RETRYABLE_CLIENT_ERRORS.has(status) || (status >= 500 && status <= 599)) {
    const reason = describeAnswer(status, '', bodyExcerpt);
    return retryAfterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', retryAfterMs, reason };
  }
  // Redirects are not followed: the new location could be a denied address (the
  // guard judged only the first), and the Authorization header would travel to
  // whatever host the target names. The owner should update target_url instead.
  const note = status >= 300 && status <= 399 ? ' (redirects are not followed)' : '';
  return { kind: 'permanent', reason: describeAnswer(status, note, bodyExcerpt) };
}

/** A try that got no HTTP answer; permanent when none could ever come (a denied address, a bad URL). */
export function classifyNoAnswer(error: string, permanent: boolean): Outcome {
  return permanent ? { kind: 'permanent', reason: error } : { kind: 'retry', reason: error };
}

/** An error thrown by the HTTP client or the address guard instead of an answer. */
export function classifyError(error: unknown): Outcome {
  const failure = describeNetworkError(error);
  return classifyNoAnswer(failure.message, failure.permanent);
}

function describeAnswer(status: number, note: string, bodyExcerpt: string): string {
  const phrase = STATUS_CODES[status];
  const answer = `target answered ${status}${phrase === undefined ? '' : ` ${phrase}`}${note}`;
  const body = bodyExcerpt.trim();
  return body === '' ? answer : `${answer}: ${body}`;
}
