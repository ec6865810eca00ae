/**
 * Records what came of claimed rows as the answers come, not per batch: the settlements made
 * in one turn of the event loop share one write (and that write a commit with whatever else
 * is being written). While the database does not answer, they are kept and written again
 * later, so that work done during an outage is not done twice once it is over; a failure that
 * is not the database's absence is the settlement's own, and is reported to its caller.
 */
import type { MatchQueue, Settled, Settlement } from '../db/match-queue.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { sendPerTurn } from '../delivery/turn-batch.js';
import type { Clock } from '../time/clock.js';

interface Pending {
  settlement: Settlement;
  resolve: (settled: Settled) => void;
  reject: (error: unknown) => void;
}

const FIRST_PAUSE_MS = 250;
const MAX_PAUSE_MS = 5_000;

export class Settler {
  private readonly perTurn = sendPerTurn<Pending>((batch) => void this.write(batch));
  /** Settlements waiting for the database to answer again. */
  private backlog: Pending[] = [];
  private retry: NodeJS.Timeout | undefined;
  private pauseMs = FIRST_PAUSE_MS;
  /** Settlements asked for and not yet written (or given up). */
  private pending = 0;
  private idleWaiters: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly queue: MatchQueue,
    private readonly holder: string,
    private readonly clock: Clock,
    private readonly onUnavailable: (error: unknown) => void,
  ) {}

  /** Resolves once written, with the rows it settled and the subscriptions it disabled. */
  settle(settlement: Settlement): Promise<Settled> {
    if (this.closed) return Promise.reject(new Error('the settler is closed'));
    this.pending++;
    return new Promise<Settled>((resolve, reject) => this.perTurn({ settlement, resolve, reject })).finally(() => {
      this.pending--;
      if (this.pending === 0) this.wakeIdle();
    });
  }

  /** Resolves when nothing is being written or waits to be. */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Gives up what waits for the database: those rows stay leased until their leases expire. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    const given = this.backlog;
    this.backlog = [];
    for (const pending of given) pending.reject(new Error('not recorded: shutting down while the database did not answer'));
  }

  private async write(batch: Pending[]): Promise<void> {
    // While a retry is due, later settlements wait with it rather than meet the same silence.
    if (this.retry !== undefined) {
      this.backlog.push(...batch);
      return;
    }
    try {
      const settled = await this.queue.settle(this.holder, merged(batch), this.clock());
      this.pauseMs = FIRST_PAUSE_MS;
      for (const pending of batch) pending.resolve(ownPart(settled, pending.settlement));
    } catch (error) {
      if (!isDatabaseUnavailable(error) || this.closed) {
        for (const pending of batch) pending.reject(error);
      } else {
        this.onUnavailable(error);
        this.backlog.push(...batch);
        this.scheduleRetry();
      }
    }
  }

  private scheduleRetry(): void {
    if (this.retry !== undefined) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      const batch = this.backlog;
      this.backlog = [];
      void this.write(batch);
    }, this.pauseMs);
    this.pauseMs = Math.min(MAX_PAUSE_MS, this.pauseMs * 2);
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** Row changes first, then the disables: disabling cancels pending rows, which must not include these. */
function merged(batch: readonly Pending[]): Settlement {
  return {
    changes: batch.flatMap((p) => p.settlement.changes),
    attempts: batch.flatMap((p) => p.settlement.attempts),
    disable: batch.flatMap((p) => p.settlement.disable),
  };
}

/** Each caller hears of the subscriptions it asked to disable, not of the others'. */
function ownPart(settled: Settled, settlement: Settlement): Settled {
  if (settlement.disable.length === 0) return { rows: settled.rows, disabled: [] };
  const asked = new Set(settlement.disable.map((d) => d.subscription));
  return { rows: settled.rows, disabled: settled.disabled.filter((row) => asked.has(row.uuid)) };
}
