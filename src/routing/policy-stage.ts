/**
 * The policy stage: due "policy" rows are claimed, grouped by (event, user), and the policy
 * service is asked once per group (not once per subscription). Allowed rows move on to
 * delivery, denied ones are recorded with the policy's status and never delivered, and when
 * the policy service fails the rows wait and are asked again: an outage never disables a
 * subscription or loses an event.
 */
import type { DatabaseHandle } from '../db/connect.js';
import { eventsByUuid } from '../db/events.js';
import { claimDueMatches, recordAttempts, settleEach, type AttemptRecord, type MatchChange } from '../db/matches.js';
import { nextDelayMs } from '../delivery/retry-schedule.js';
import type { JsonValue } from '../jsonpath/index.js';
import type { Metrics } from '../metrics/metrics.js';
import type { PolicyAnswer } from '../policy/policy-client.js';
import type { Clock } from '../time/clock.js';
import type { ClaimPacer } from './claim-pacer.js';
import type { Handoff, HandedMatch } from './handoff.js';
import { nextBatch } from './next-batch.js';

export interface PolicySource {
  ask(user: string, event: JsonValue): Promise<PolicyAnswer>;
}

export interface StageDependencies {
  database: DatabaseHandle;
  clock: Clock;
  /** Names this instance's claims. */
  holder: string;
  leaseUs: number;
  batchSize: number;
  retryDelaysMs: readonly number[];
  random: () => number;
  metrics?: Metrics;
}

export interface PolicyStageDependencies extends StageDependencies {
  policy: PolicySource;
  /** Rows were allowed: the delivery stage has work. */
  onAllowed: () => void;
  /** Rows handed over by /receive: taken before claiming. */
  inbox?: Handoff;
  /** Where allowed rows are handed on to the delivery stage. */
  next?: Handoff;
  /** Spaces out claims that find nothing; without it every step may claim. */
  pacer?: ClaimPacer;
}

export function policyStep(deps: PolicyStageDependencies): () => Promise<number> {
  return async () => {
    const work = await takeWork(deps);
    if (work.length === 0) return 0;
    const groups = groupBy(work, (w) => `${w.row.event_uuid}\u0000${w.row.owner}`);
    const answered = await Promise.all(
      [...groups.values()].map(async (group) => {
        const { row, document } = group[0]!;
        const started = performance.now();
        const answer = await deps.policy.ask(row.owner, document);
        return { group, answer, durationMs: performance.now() - started, at: deps.clock() };
      }),
    );
    let allowed = false;
    const handedOn: HandedMatch[] = [];
    let settled: Set<string>;
    try {
      settled = await deps.database.write(async (tx) => {
        const attempts: AttemptRecord[] = [];
        const settlements: Array<{ uuid: string; change: MatchChange }> = [];
        const settledAt = deps.clock();
        for (const { group, answer, durationMs, at } of answered) {
          const settle = (change: MatchChange) => settlements.push(...group.map((w) => ({ uuid: w.row.uuid, change })));
          if (answer.kind === 'allow') {
            allowed = true;
            const handOn = deps.next?.reserve(group.length) ?? false;
            const leaseUntil = handOn ? settledAt + deps.leaseUs : undefined;
            // `attempts` counted policy tries so far; from here on it counts delivery tries.
            const change: MatchChange = { state: 'deliver', due: settledAt, policyCode: answer.status, attempts: 'reset', ...(leaseUntil === undefined ? {} : { leaseUntil }) };
            settle(change);
            if (leaseUntil !== undefined) {
              for (const w of group) {
                handedOn.push({ ...w, row: { ...w.row, state: 'deliver', due: settledAt, policy_code: answer.status, attempts: 0, locked_until: leaseUntil, locked_by: deps.holder } });
              }
            }
          } else if (answer.kind === 'deny') {
            settle({ state: 'denied', policyCode: answer.status });
          } else {
            // Never given up on: the delays stop growing at the end of the schedule.
            const tries = Math.min(group[0]!.row.attempts + 1, deps.retryDelaysMs.length);
            const delayMs = nextDelayMs(tries, deps.retryDelaysMs, deps.random) ?? 0;
            settle({ state: 'policy', due: at + delayMs * 1000, attempts: 'count' });
            for (const { row } of group) attempts.push({ matchUuid: row.uuid, stage: 'policy', at, status: answer.status, error: answer.error, durationMs });
          }
        }
        const settled = await settleEach(tx, deps.holder, settlements, settledAt);
        await recordAttempts(tx, deps.database.capabilities, attempts);
        return settled;
      });
    } catch (error) {
      deps.next?.release(handedOn.length);
      throw error;
    }
    // A row not settled here is gone (its event purged during the policy call) or another
    // holder's now (its lease ran out): delivering it would send a purged event, or send twice.
    const stillOurs = handedOn.filter((w) => settled.has(w.row.uuid));
    deps.next?.release(handedOn.length - stillOurs.length);
    deps.next?.put(stillOurs);
    for (const { answer } of answered) deps.metrics?.policyAnswered(answer.kind);
    if (allowed) deps.onAllowed();
    return work.length;
  };
}

/** Rows handed over in memory, and due rows claimed (see next-batch.ts), each with its event. */
async function takeWork(deps: PolicyStageDependencies): Promise<HandedMatch[]> {
  const now = deps.clock();
  const lease = { holder: deps.holder, now, durationUs: deps.leaseUs };
  // A claim is a write: it shares a commit with the writes of the moment rather than pay its own.
  const { handed, claimed } = await nextBatch(deps, now, (limit) =>
    deps.database.write((tx) => claimDueMatches(tx, deps.database.capabilities, 'policy', lease, limit)),
  );
  if (claimed.length === 0) return handed;
  const events = await eventsByUuid(deps.database.db, claimed.map((r) => r.event_uuid));
  const documents = new Map<string, JsonValue>();
  // A row whose event was purged since the claim went with it (cascade): nothing to settle.
  const claimedWork = claimed.flatMap((row) => {
    const event = events.get(row.event_uuid);
    if (!event) return [];
    let document = documents.get(event.uuid);
    if (document === undefined) documents.set(event.uuid, (document = JSON.parse(event.body) as JsonValue));
    return [{ row, event, document }];
  });
  return [...handed, ...claimedWork];
}

function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const group = groups.get(k);
    if (group) group.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}
