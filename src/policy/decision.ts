/**
 * What the policy service's answer for one (event, user) means for the match rows it covers:
 * pure, over plain data (test/policy/decision.test.ts).
 *
 * - allowed (2xx): the rows go on to delivery, due at once (in their place), their tries counted afresh;
 * - denied (4xx): recorded with the policy's status, never delivered;
 * - no decision (5xx, time-out, no connection): asked again later on the retry schedule, whose
 *   last delay repeats for ever: an outage of the policy service never disables a subscription
 *   or loses an event. Each such try is recorded as an attempt of each row.
 */
import type { MatchChange } from '../db/matches.js';
import type { MatchesTable } from '../db/tables.js';
import { nextDelayMs, type RetrySchedule } from '../routing/retry-schedule.js';
import type { PolicyAnswer } from './policy-client.js';

export interface PolicyDecision {
  /** The same change for every row of the group. */
  change: MatchChange;
  /** Recorded for each row when the service gave no decision. */
  attempt?: { at: number; status: number | null; error: string; durationMs: number };
  allowed: boolean;
}

/** `rows`: the group's rows (asked about together, so tried together); `at`: when the answer came (µs). */
export function decidePolicy(
  rows: ReadonlyArray<Pick<MatchesTable, 'attempts'>>,
  answer: PolicyAnswer,
  asked: { at: number; durationMs: number },
  schedule: RetrySchedule,
): PolicyDecision {
  if (answer.kind === 'allow') {
    // Due already (its policy call was): it keeps its place. `attempts` counted policy tries so
    // far; from here on it counts delivery tries.
    return { change: { state: 'deliver', policyCode: answer.status, attempts: 'reset' }, allowed: true };
  }
  if (answer.kind === 'deny') return { change: { state: 'denied', policyCode: answer.status }, allowed: false };
  const tries = Math.min(Math.max(...rows.map((r) => r.attempts)) + 1, schedule.delaysMs.length);
  const delayMs = nextDelayMs(tries, schedule.delaysMs, schedule.random) ?? 0;
  return {
    change: { state: 'policy', due: asked.at + delayMs * 1000, attempts: 'count' },
    attempt: { at: asked.at, status: answer.status, error: answer.error, durationMs: asked.durationMs },
    allowed: false,
  };
}
