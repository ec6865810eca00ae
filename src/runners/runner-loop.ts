/**
 * What the policy and delivery runners share around their work: rounds of intake run in a
 * loop (woken by new work, polled otherwise), the calls out they have started, and a stop that
 * takes nothing more and waits for those calls and their settlement.
 */
import type { MatchesTable } from '../db/tables.js';
import { IdleWait } from './idle-wait.js';
import type { Settler } from './settler.js';
import { startWorkerLoop, type WorkerLoop } from './worker-loop.js';

/**
 * How often a runner holding work looks at the queue when nothing wakes it: retries coming
 * due, and on PostgreSQL other instances' work, are found this often.
 */
export const RUNNER_POLL_MS = 1_000;
/** The longest wait of a runner that holds nothing (idle-wait.ts). */
export const RUNNER_IDLE_POLL_MS = 30_000;

/** What the policy and delivery runners offer alike. */
export interface Runner {
  /** One round: gives back rows whose leases run short, takes in rows, starts what may start; resolves with the rows taken in. */
  intake(): Promise<number>;
  /** Resolves once nothing is in flight and every outcome is recorded. */
  idle(): Promise<void>;
  /** Runs rounds until stopped: when woken, and every `pollMs` besides. */
  start(): void;
  /** New rows may be waiting (handed over, or due). */
  wake(): void;
  /** Takes nothing more, waits for the calls in flight and their settlement. */
  stop(): Promise<void>;
}

export interface RunnerLoopOptions {
  /** How often the queue is looked at when nothing wakes the runner (ms). */
  pollMs: number;
  /** Holding nothing, the runner waits longer each round up to this (ms; idle-wait.ts); without it, always `pollMs`. */
  idlePollMs?: number;
  maxErrorPauseMs: number;
  onError: (error: unknown) => void;
}

/** Work started and not finished yet: waited for at shutdown, and by tests. */
class InFlight {
  private readonly running = new Set<Promise<void>>();

  get size(): number {
    return this.running.size;
  }

  add(work: Promise<void>): void {
    const tracked = work.finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }

  /** Resolves once nothing is running, including what started while waiting. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}

export class RunnerLoop {
  /** Calls out and settlements started and not finished. */
  readonly inFlight = new InFlight();
  private loop: WorkerLoop | undefined;
  private stopped = false;
  readonly idleWait: IdleWait;

  /** `holding`: whether the runner holds work besides what is in flight (waiting in its lanes, origins down). */
  constructor(
    private readonly intake: () => Promise<number>,
    private readonly settler: Settler,
    private readonly options: RunnerLoopOptions,
    private readonly holding: () => boolean = () => false,
    private readonly clock: () => number = () => Date.now() * 1000,
  ) {
    this.idleWait = new IdleWait(options.pollMs, options.idlePollMs ?? options.pollMs);
  }

  /** Taking nothing more: no new call may start. */
  get stopping(): boolean {
    return this.stopped;
  }

  start(): void {
    this.loop ??= startWorkerLoop({
      step: async () => {
        const taken = await this.intake();
        if (taken > 0) this.idleWait.reset();
        return taken;
      },
      idleMs: () => this.idleWait.next(this.clock(), this.holding() || this.inFlight.size > 0 || this.settler.pending),
      maxErrorPauseMs: this.options.maxErrorPauseMs,
      onError: this.options.onError,
    });
  }

  wake(): void {
    this.idleWait.reset();
    this.loop?.wake();
  }

  /** Resolves once nothing is in flight and every outcome is recorded. */
  async idle(): Promise<void> {
    await this.inFlight.idle();
    await this.settler.idle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop?.stop();
    await this.idle();
  }
}

/** How often rows waiting in memory are looked at for leases running short (µs). */
const LEASE_CHECK_US = 250_000;
/**
 * Lease time kept back, beyond one exchange's time-out, for recording its outcome, so that the
 * row is still ours when that commits.
 */
const SETTLE_MARGIN_US = 500_000;

/** Whether a leased row still has time for a call out (at most `timeoutMs`) and its settlement. */
export class LeaseRoom {
  private readonly neededUs: number;
  private lastCheck = -Infinity;

  constructor(timeoutMs: number) {
    this.neededUs = timeoutMs * 1000 + SETTLE_MARGIN_US;
  }

  tooShort(row: Pick<MatchesTable, 'locked_until'>, now: number): boolean {
    return row.locked_until === null || row.locked_until - now < this.neededUs;
  }

  /** By when (ms from now) a call out must be over for its outcome to be recorded under the lease. */
  leftForExchangeMs(row: Pick<MatchesTable, 'locked_until'>, now: number): number {
    return row.locked_until === null ? 0 : (row.locked_until - now - SETTLE_MARGIN_US) / 1000;
  }

  /** True at most every 250 ms: time to look for waiting rows whose leases run short. */
  checkDue(now: number): boolean {
    if (now - this.lastCheck < LEASE_CHECK_US) return false;
    this.lastCheck = now;
    return true;
  }
}
