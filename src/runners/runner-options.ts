/**
 * What the policy and delivery runners are both given: the queue and the settler of its rows,
 * the leases they take, how much they hold, the retry schedule, where handed rows come from,
 * and the pacing of their loop. Each runner's own options add what only it needs.
 */
import type { MatchQueue } from '../db/stores/match-queue.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Clock } from '../time/clock.js';
import type { ClaimPacer } from './claim-pacer.js';
import type { Handoff } from './handoff.js';
import type { RetrySchedule } from './retry-schedule.js';
import type { RunnerLoopOptions } from './runner-loop.js';
import type { Settler } from './settler.js';

/** Rows a runner takes in per claim. */
export const CLAIM_BATCH = 128;
/** Rows (deliveries) or questions (policy calls) a runner holds in memory at most. */
export const RUNNER_CAPACITY = 1_024;

export interface RunnerOptions extends RunnerLoopOptions {
  queue: MatchQueue;
  settler: Settler;
  clock: Clock;
  /** Names this instance's leases. */
  holder: string;
  leaseUs: number;
  /** Held in memory (waiting or in flight) at most: rows (delivery), questions (policy calls). */
  capacity: number;
  /** Rows taken in per claim at most. */
  batchSize: number;
  schedule: RetrySchedule;
  /** Rows handed over by the stage before (/receive for the policy runner, the policy runner for delivery). */
  inbox?: Handoff;
  pacer?: ClaimPacer;
  metrics?: Metrics;
}
