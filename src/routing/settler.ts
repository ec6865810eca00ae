/**
 * Records what came of claimed rows as the answers come, not per batch: at most two writes at
 * a time (one being written while the other syncs to disk), each taking every settlement made
 * while the others were under way (the first waits for the rest of its event-loop turn). Under
 * load that is one transaction for hundreds of rows; on PostgreSQL a transaction per turn spent
 * a third of the main thread in socket writes.
 * While the database does not answer, or refuses writes for lack of space, settlements are
 * kept and written again later, so that work done meanwhile is not done twice once it is over;
 * a failure that is not such a condition of the database is the settlement's own, and is
 * reported to its caller.
 */
import type { MatchQueue, Settled, Settlement } from '../db/match-queue.js';
import { isConditionOfTheDatabase } from '../db/storage-full.js';
import { Backoff } from '../time/backoff.js';
import type { Clock } from '../time/clock.js';

interface Pending {
  settlement: Settlement;
  resolve: (settled: Settled) => void;
  reject: (error: unknown) => void;
}

/** Settlements per write at most, so that one transaction stays short. */
const MAX_PER_WRITE = 500;
/** Writes under way at once: the group commit writes the next commit while the last one syncs. */
const MAX_WRITES = 2;

export class Settler {
  /** Settlements not written yet: waiting for the write under way, or for the database. */
  private waiting: Pending[] = [];
  private writing = 0;
  private scheduled = false;
  private retry: NodeJS.Timeout | undefined;
  /** Between writes again while the database does not answer. */
  private readonly pause = new Backoff(250, 5_000);
  /** Settlements asked for and not yet written (or given up). */
  private pending = 0;
  private idleWaiters: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly queue: MatchQueue,
    private readonly holder: string,
    private readonly clock: Clock,
    /** Each time a write is deferred (the database not answering, or full). */
    private readonly onUnavailable: (error: unknown) => void,
  ) {}

  /** Resolves once written, with the rows it settled and the subscriptions it disabled. */
  settle(settlement: Settlement): Promise<Settled> {
    if (this.closed) return Promise.reject(new Error('the settler is closed'));
    this.pending++;
    const written = new Promise<Settled>((resolve, reject) => this.waiting.push({ settlement, resolve, reject }));
    this.writeSoon();
    return written.finally(() => {
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
    const given = this.waiting;
    this.waiting = [];
    for (const pending of given) pending.reject(new Error('not recorded: shutting down'));
  }

  /** After this turn, unless as many writes as may be are under way (they write the rest when done) or a retry is due. */
  private writeSoon(): void {
    if (this.writing >= MAX_WRITES || this.scheduled || this.retry !== undefined) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.write();
    });
  }

  private async write(): Promise<void> {
    if (this.writing >= MAX_WRITES || this.waiting.length === 0) return;
    this.writing++;
    const batch = this.waiting.splice(0, MAX_PER_WRITE);
    try {
      const settled = await this.queue.settle(this.holder, merged(batch), this.clock());
      this.pause.reset();
      for (const pending of batch) pending.resolve(ownPart(settled, pending.settlement));
    } catch (error) {
      if (!isConditionOfTheDatabase(error) || this.closed) {
        for (const pending of batch) pending.reject(error);
      } else {
        this.onUnavailable(error);
        this.waiting.unshift(...batch);
        this.scheduleRetry();
      }
    } finally {
      this.writing--;
      if (this.waiting.length > 0) this.writeSoon();
    }
  }

  private scheduleRetry(): void {
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.write();
    }, this.pause.next());
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
    runs: batch.flatMap((p) => p.settlement.runs ?? []),
    release: batch.flatMap((p) => p.settlement.release ?? []),
  };
}

/** Each caller hears of the subscriptions it asked to disable, not of the others'. */
function ownPart(settled: Settled, settlement: Settlement): Settled {
  if (settlement.disable.length === 0) return { ...settled, disabled: [] };
  const asked = new Set(settlement.disable.map((d) => d.subscription));
  return { ...settled, disabled: settled.disabled.filter((row) => asked.has(row.uuid)) };
}
