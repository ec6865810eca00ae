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
import type { MatchesTable } from '../db/tables.js';
import { nextDelayMs } from '../delivery/retry-schedule.js';
import type { JsonValue } from '../jsonpath/index.js';
import type { Metrics } from '../metrics/metrics.js';
import type { PolicyAnswer } from '../policy/policy-client.js';
import type { Clock } from '../time/clock.js';

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
}

export function policyStep(deps: PolicyStageDependencies): () => Promise<number> {
  return async () => {
    const lease = { holder: deps.holder, now: deps.clock(), durationUs: deps.leaseUs };
    // A claim is a write: it shares a commit with the writes of the moment rather than pay its own.
    const rows = await deps.database.write((tx) => claimDueMatches(tx, deps.database.capabilities, 'policy', lease, deps.batchSize));
    if (rows.length === 0) return 0;
    const events = await eventsByUuid(deps.database.db, rows.map((r) => r.event_uuid));
    const groups = groupBy(rows, (r) => `${r.event_uuid}\u0000${r.owner}`);
    const answered = await Promise.all(
      [...groups.values()].flatMap((group) => {
        const first = group[0]!;
        const event = events.get(first.event_uuid);
        // Purged since the claim: its match rows went with it (cascade), nothing is left to settle.
        if (!event) return [];
        return [
          (async () => {
            const started = performance.now();
            const answer = await deps.policy.ask(first.owner, JSON.parse(event.body) as JsonValue);
            return { group, answer, durationMs: performance.now() - started, at: deps.clock() };
          })(),
        ];
      }),
    );
    let allowed = false;
    await deps.database.write(async (tx) => {
      const attempts: AttemptRecord[] = [];
      const settlements: Array<{ uuid: string; change: MatchChange }> = [];
      const settledAt = deps.clock();
      for (const { group, answer, durationMs, at } of answered) {
        const settle = (change: MatchChange) => settlements.push(...group.map((r) => ({ uuid: r.uuid, change })));
        if (answer.kind === 'allow') {
          allowed = true;
          // `attempts` counted policy tries so far; from here on it counts delivery tries.
          settle({ state: 'deliver', due: settledAt, policyCode: answer.status, attempts: 'reset' });
        } else if (answer.kind === 'deny') {
          settle({ state: 'denied', policyCode: answer.status });
        } else {
          // Never given up on: the delays stop growing at the end of the schedule.
          const tries = Math.min(group[0]!.attempts + 1, deps.retryDelaysMs.length);
          const delayMs = nextDelayMs(tries, deps.retryDelaysMs, deps.random) ?? 0;
          settle({ state: 'policy', due: at + delayMs * 1000, attempts: 'count' });
          for (const { uuid } of group) attempts.push({ matchUuid: uuid, stage: 'policy', at, status: answer.status, error: answer.error, durationMs });
        }
      }
      await settleEach(tx, deps.holder, settlements, settledAt);
      await recordAttempts(tx, attempts);
    });
    for (const { answer } of answered) deps.metrics?.policyAnswered(answer.kind);
    if (allowed) deps.onAllowed();
    return rows.length;
  };
}

function groupBy(rows: readonly MatchesTable[], key: (row: MatchesTable) => string): Map<string, MatchesTable[]> {
  const groups = new Map<string, MatchesTable[]>();
  for (const row of rows) {
    const k = key(row);
    const group = groups.get(k);
    if (group) group.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}
