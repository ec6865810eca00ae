/**
 * The policy runner: takes "policy" rows (handed over by /receive, or claimed from the queue),
 * asks the policy service once per (event, user) — not once per subscription — and settles each
 * question as its answer comes (decision.ts turns it into an outcome, runners/after-attempt.ts
 * says what that means; runners/runner-core.ts runs the rounds and the questions, with this
 * runner's strategy). Allowed rows are handed on to the delivery runner in memory, still
 * leased, and written allowed only with what comes of them there. Each user has a share of
 * slots of its own (lanes.ts), so the policy
 * service being slow for one user delays no one else; claims leave out a user with as much
 * again waiting. A row waits in memory only while its lease still has room for a whole
 * exchange; then it is given back to the queue untried, keeping its place.
 * The runner asks no further ahead than delivery goes: while allowed rows overflow into the
 * queue because the delivery runner is full, it takes in no new questions.
 */
import type { EventRow } from '../db/stores/events.js';
import type { MatchesTable } from '../db/tables.js';
import { OPERATIONAL_SOURCE } from '../operational-source.js';
import type { HandedMatch, Handoff } from '../runners/handoff.js';
import { type AttemptResult, type AttemptStrategy, RunnerCore, type Work } from '../runners/runner-core.js';
import type { Runner } from '../runners/runner-loop.js';
import type { RunnerOptions } from '../runners/runner-options.js';
import type { Tracing } from '../tracing/tracing.js';
import { ALLOWED_UNASKED, outcomeOfAnswer } from './decision.js';
import type { PolicyAnswer } from './policy-client.js';

export interface PolicySource {
  /**
   * `event`: its JSON as logged (the text, not a parsed copy: handed to the outbound thread and
   * sent as it is). `traceparent`: the policy call's span, for the policy service to continue.
   */
  ask(user: string, event: string, traceparent?: string): Promise<PolicyAnswer>;
}

export interface PolicyRunnerOptions extends RunnerOptions {
  policy: PolicySource;
  /** NOTIFICATIONS_TARGET_TIMEOUT, which bounds each policy call too. */
  timeoutMs: number;
  /** Questions in flight at once for one user. */
  slotsPerUser: number;
  /** Where allowed rows are handed on to the delivery runner; without it they are left to its claims. */
  next?: Handoff;
  /** Rows were allowed: the delivery runner has work. */
  onAllowed: () => void;
  /** When given, each policy call has a span, a child of its event's receive span. */
  tracing?: Tracing;
}

export type PolicyRunner = Runner;

/**
 * Policy calls in flight at once for one user: the policy service being slow for one user
 * delays only that user's events (128 answers of 50 ms each are 2,560 events a second).
 */
export const POLICY_SLOTS_PER_USER = 128;

/**
 * The share of a lease an allowed row must have left to be handed on: it may wait in the
 * handoff until half a lease is left (HANDOFF_LEASE_LEFT), then in a lane until one exchange's
 * room is.
 */
const HAND_ON_LEASE_LEFT = 0.75;

/** The rows of one event matched for one user: one policy call. Its lane is the user. */
interface Question extends Work {
  event: EventRow;
}

/** The answer; none for an operational event, allowed without asking. */
interface Answered extends AttemptResult {
  answer?: PolicyAnswer;
}

export function policyRunner(options: PolicyRunnerOptions): PolicyRunner {
  const questions: AttemptStrategy<Question, Answered> = {
    slots: () => options.slotsPerUser,
    claimFilter: (leftOut) => ({ excludeOwners: [...leftOut] }),
    // Allowed rows already wait in the queue for a delivery runner with no room: answers asked
    // for now would only wait behind them, growing older, while their calls take the machine's
    // time from intake (a burst against slow targets). The questions stay in the queue.
    paused: () => options.next?.overflowing === true,
    workOf: async (taken) => questionsOf(taken),
    openSpan: ({ lane, rows, event }) =>
      event.source === OPERATIONAL_SOURCE
        ? undefined
        : options.tracing?.policyCall(event.traceparent, {
            'notifications.owner': lane,
            'notifications.event.uuid': event.uuid,
            'notifications.matches': rows.length,
            'notifications.attempt': rows[0]!.attempts + 1,
          }),
    attempt: async ({ lane, event }, traceparent) => {
      if (event.source === OPERATIONAL_SOURCE) return { outcome: ALLOWED_UNASKED, durationMs: 0 };
      const started = performance.now();
      const answer = await options.policy.ask(lane, event.body, traceparent);
      return { outcome: outcomeOfAnswer(answer), durationMs: performance.now() - started, answer };
    },
    endSpan: (span, { answer }) => {
      if (answer === undefined) return;
      span.end(
        { 'notifications.policy.answer': answer.kind, ...(answer.status === null ? {} : { 'http.response.status_code': answer.status }) },
        answer.kind === 'retry' ? answer.error : undefined,
      );
    },
    // Allowed rows go on to the delivery runner as they are, still leased and still `policy` in
    // the database: it writes the allowance with what comes of them. Only while their leases
    // have room to wait there, and while it has room for them; otherwise they are settled
    // allowed, for its claims.
    ended: ({ work: { rows, event }, result: { answer }, after, at }) => {
      const handOn = after.result === 'allowed' && leaseLeft(rows, at) && options.next?.reserve(rows.length) === true;
      if (!handOn) return {};
      options.next!.put(rows.map((row) => ({ row: { ...row, policy_code: answer?.status ?? null, attempts: 0 }, event })));
      return { handedOn: true };
    },
    settled: ({ result: { answer }, after }) => {
      if (answer !== undefined) options.metrics?.policyAnswered(answer.kind);
      if (after.result === 'allowed') options.onAllowed();
    },
  };
  const core = new RunnerCore('policy', options, options.timeoutMs, questions);
  // Delivery caught up with what it had been given: questions may be asked again.
  options.next?.whenDrained(() => core.wake());

  /** Whether the rows' leases have at least HAND_ON_LEASE_LEFT of a lease left `at`. */
  function leaseLeft(rows: readonly MatchesTable[], at: number): boolean {
    return rows.every((row) => row.locked_until !== null && row.locked_until - at >= options.leaseUs * HAND_ON_LEASE_LEFT);
  }

  return core.runner();
}

/** Rows grouped by (event, user): each group is one question to the policy service. */
function questionsOf(taken: readonly HandedMatch[]): Question[] {
  const groups = new Map<string, { lane: string; rows: MatchesTable[]; event: EventRow }>();
  for (const { row, event } of taken) {
    const key = `${row.event_uuid}\u0000${row.owner}`;
    const group = groups.get(key);
    if (group) group.rows.push(row);
    else groups.set(key, { lane: row.owner, rows: [row], event });
  }
  return [...groups.values()];
}
