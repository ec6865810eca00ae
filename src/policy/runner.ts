/**
 * The policy runner: takes "policy" rows (handed over by /receive, or claimed from the queue),
 * asks the policy service once per (event, user) — not once per subscription — and settles each
 * question as its answer comes (decision.ts turns it into an outcome, routing/after-attempt.ts
 * says what that means; runner-core.ts does the intake and give-back). Allowed rows are
 * handed on to the delivery runner in memory, still leased, and written allowed only with what
 * comes of them there. Each user has a share of slots of its own (lanes.ts), so the policy
 * service being slow for one user delays no one else; claims leave out a user with as much
 * again waiting. A row waits in memory only while its lease still has room for a whole
 * exchange; then it is given back to the queue untried, keeping its place.
 * The runner asks no further ahead than delivery goes: while allowed rows overflow into the
 * queue because the delivery runner is full, it takes in no new questions.
 */
import { OPERATIONAL_SOURCE } from '../operational-source.js';
import type { MatchesTable } from '../db/tables.js';
import type { HandedMatch, Handoff } from '../routing/handoff.js';
import { afterAttempt } from '../routing/after-attempt.js';
import { Lanes } from '../routing/lanes.js';
import type { Batch } from '../routing/next-batch.js';
import { RunnerCore } from '../routing/runner-core.js';
import type { Runner } from '../routing/runner-loop.js';
import type { RunnerOptions } from '../routing/runner-options.js';
import type { TraceSpan, Tracing } from '../tracing/tracing.js';
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
 * The share of a lease an allowed row must have left to be handed on: it may wait in the
 * handoff until half a lease is left (main.ts), then in a lane until one exchange's room is.
 */
const HAND_ON_LEASE_LEFT = 0.75;

/** The rows of one event matched for one user: one policy call. */
interface Question {
  owner: string;
  rows: HandedMatch[];
}

export function policyRunner(options: PolicyRunnerOptions): PolicyRunner {
  const { queue, clock } = options;
  const lanes = new Lanes<Question>(() => options.slotsPerUser);
  const core = new RunnerCore('policy', options, options.timeoutMs, intake);

  // Delivery caught up with what it had been given: questions may be asked again.
  options.next?.whenDrained(() => core.wake());

  async function intake(): Promise<number> {
    const now = clock();
    core.giveBackExpiring(now, (tooShort) => rowsOf(lanes.removeWaiting((q) => q.rows.some((w) => tooShort(w.row)))));
    // Allowed rows already wait in the queue for a delivery runner with no room: answers asked
    // for now would only wait behind them, growing older, while their calls take the machine's
    // time from intake (a burst against slow targets). The questions stay in the queue.
    if (options.next?.overflowing === true) return 0;
    const room = Math.min(options.batchSize, options.capacity - lanes.size);
    if (room <= 0) return 0;
    const claims = {
      leftOut: () => new Set(lanes.fullKeys()),
      claim: (limit: number, leftOut: ReadonlySet<string>) => core.claim(now, limit, { excludeOwners: [...leftOut] }),
    };
    return core.takeIn(now, room, claims, place, dispatch);
  }

  /** Puts the questions of what was taken in their users' lanes. */
  async function place({ handed, claimed }: Batch): Promise<void> {
    const work = [...handed, ...(await withEvents(claimed))];
    const full: Question[] = [];
    for (const question of questions(work)) {
      // More than a user's lane holds: the queue keeps it until there is room.
      if (lanes.isFull(question.owner)) full.push(question);
      else lanes.add(question.owner, question);
    }
    core.giveBack(rowsOf(full));
  }

  /** Claimed rows with their events; a row whose event was purged since went with it (cascade). */
  async function withEvents(claimed: readonly MatchesTable[]): Promise<HandedMatch[]> {
    if (claimed.length === 0) return [];
    const events = await queue.events(claimed.map((r) => r.event_uuid));
    return claimed.flatMap((row) => {
      const event = events.get(row.event_uuid);
      return event ? [{ row, event }] : [];
    });
  }

  /** Starts what may start: in every lane, or in `only` (the one whose slot just came free). */
  function dispatch(only?: string): void {
    if (core.stopping) return;
    const now = clock();
    for (const { key, item } of lanes.start(undefined, only)) {
      if (!core.mayStart(rowsOf([item]), now)) {
        lanes.finished(key);
        core.giveBack(rowsOf([item]));
        continue;
      }
      core.track(ask(item));
    }
  }

  /** The policy service's answer about the event of `rows`, under a span of its own when tracing. */
  async function askPolicy(owner: string, rows: readonly HandedMatch[]): Promise<PolicyAnswer> {
    const span = options.tracing?.policyCall(rows[0]!.event.traceparent, {
      'notifications.owner': owner,
      'notifications.event.uuid': rows[0]!.row.event_uuid,
      'notifications.matches': rows.length,
      'notifications.attempt': rows[0]!.row.attempts + 1,
    });
    const answer = await options.policy.ask(owner, rows[0]!.event.body, span?.traceparent);
    if (span !== undefined) endPolicySpan(span, answer);
    return answer;
  }

  async function ask(question: Question): Promise<void> {
    const { owner, rows } = question;
    const started = performance.now();
    const answer = rows[0]!.event.source === OPERATIONAL_SOURCE ? undefined : await askPolicy(owner, rows);
    const outcome = answer === undefined ? ALLOWED_UNASKED : outcomeOfAnswer(answer);
    const at = clock();
    lanes.finished(owner);
    const taken = rows.map((w) => w.row);
    const after = afterAttempt('policy', taken, outcome, { at, durationMs: performance.now() - started }, options.schedule);
    // Allowed rows go on to the delivery runner as they are, still leased and still `policy` in
    // the database: it writes the allowance with what comes of them. Only while their leases
    // have room to wait there, and while it has room for them; otherwise they are settled
    // allowed, for its claims.
    const handOn = after.result === 'allowed' && leaseLeft(taken, at) && options.next?.reserve(rows.length) === true;
    if (handOn) options.next!.put(rows.map((w) => ({ ...w, row: { ...w.row, policy_code: answer?.status ?? null, attempts: 0 } })));
    const settling = handOn ? undefined : core.settle(taken, after);
    dispatch(owner);
    core.wake();
    try {
      await settling;
    } catch (error) {
      options.onError(error);
      return;
    }
    if (answer !== undefined) options.metrics?.policyAnswered(answer.kind);
    if (after.result === 'allowed') options.onAllowed();
  }

  /** Whether the rows' leases have at least HAND_ON_LEASE_LEFT of a lease left `at`. */
  function leaseLeft(rows: readonly MatchesTable[], at: number): boolean {
    return rows.every((row) => row.locked_until !== null && row.locked_until - at >= options.leaseUs * HAND_ON_LEASE_LEFT);
  }

  return core.runner();
}

function endPolicySpan(span: TraceSpan, answer: PolicyAnswer): void {
  span.end(
    { 'notifications.policy.answer': answer.kind, ...(answer.status === null ? {} : { 'http.response.status_code': answer.status }) },
    answer.kind === 'retry' ? answer.error : undefined,
  );
}

function rowsOf(given: readonly Question[]): MatchesTable[] {
  return given.flatMap((q) => q.rows.map((w) => w.row));
}

/** Rows grouped by (event, user): each group is one question to the policy service. */
function questions(work: readonly HandedMatch[]): Question[] {
  const groups = new Map<string, Question>();
  for (const w of work) {
    const key = `${w.row.event_uuid}\u0000${w.row.owner}`;
    const group = groups.get(key);
    if (group) group.rows.push(w);
    else groups.set(key, { owner: w.row.owner, rows: [w] });
  }
  return [...groups.values()];
}
