/**
 * What the policy service's answer for one (event, user) comes to, in the terms of
 * runners/after-attempt.ts (which says what then happens to the rows it covers):
 *
 * - allowed (2xx): accepted;
 * - denied (4xx): refused;
 * - no decision (5xx, time-out, no connection): later.
 */
import type { AttemptOutcome } from '../runners/after-attempt.js';
import type { PolicyAnswer } from './policy-client.js';

export function outcomeOfAnswer(answer: PolicyAnswer): AttemptOutcome {
  if (answer.kind === 'allow') return { kind: 'accepted', status: answer.status };
  if (answer.kind === 'deny') return { kind: 'refused', status: answer.status };
  return { kind: 'later', status: answer.status, error: answer.error, reason: answer.error };
}

/** The service's own (operational) events tell owners of their own subscriptions: allowed without asking. */
export const ALLOWED_UNASKED: AttemptOutcome = { kind: 'accepted', status: null };
