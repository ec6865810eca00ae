/**
 * Records what came of claimed rows as the answers come, not per batch: at most two writes at
 * a time (one being written while the other syncs to disk), each taking every settlement made
 * while the others were under way (the first waits for the rest of its event-loop turn). Under
 * load that is one transaction for hundreds of rows; on PostgreSQL a transaction per turn spent
 * a third of the main thread in socket writes.
 * While the database does not answer, or refuses writes for lack of space, settlements are
 * held: kept in memory, never given up while the process lives, and written again later,
 * before what came meanwhile. A failure that is not such a condition of the database is the
 * settlement's own, and is reported to its caller.
 *
 * A held outcome must not be overtaken by a second attempt at its rows. Their leases may run
 * out in the database while it waits (their extension, below, is best effort), and a claim
 * would take them (on a full disk a claim, a small write, still fits where a settlement does
 * not). So the runners of this process claim nothing while any outcome is held (`holding`):
 * once the database takes writes again, what is held is written first, and claims go on after
 * it (`whenHeldWritten`). Rows whose outcome is being written, not yet held, are left out of
 * claims by uuid once their leases run out (`unwrittenPast`).
 *
 * Across instances (PostgreSQL) the database is all they share: a row whose lease has run out
 * there is another instance's to claim and attempt again. So the leases of rows whose outcome
 * is not written are extended (`keepLeases`): those of held outcomes, and those on their way
 * whose leases would run out before the next look; every third of a lease, and at once when an
 * outcome is first held. It is one small update, outside the group commit, which a full disk
 * refusing the settlement still takes, as it takes a claim. Best effort: should the database
 * refuse or not answer even that until a lease has run out, another instance may claim the row
 * and make a second attempt. A held outcome is written only where the row's lease still names
 * this instance (no other has taken it since, so no other attempt was made); its attempt is
 * recorded in the history either way. A process that ends while it holds outcomes (killed, or
 * past its shutdown grace) loses them, and nothing extends their leases any more: their rows
 * are attempted again once those run out, at least once (docs/delivery.md).
 */
import type { MatchQueue, Settled, Settlement } from '../db/stores/match-queue.js';
import { isConditionOfTheDatabase } from '../db/storage-full.js';
import { Backoff } from '../time/backoff.js';
import type { Clock } from '../time/clock.js';

interface Pending {
  settlement: Settlement;
  /** The rows it settles. */
  rows: readonly string[];
  /** When the first of their leases runs out (µs), as they were claimed. */
  leaseEnds: number;
  /** A write of it was refused by a condition of the database: it waits for the database. */
  held: boolean;
  resolve: (settled: Settled) => void;
  reject: (error: unknown) => void;
}

/** Settlements per write at most, so that one transaction stays short. */
const MAX_PER_WRITE = 500;
/** Writes under way at once: the group commit writes the next commit while the last one syncs. */
const MAX_WRITES = 2;
/** Leases are looked at this many times a lease: an extension that fails leaves two more tries before one runs out. */
const LOOKS_PER_LEASE = 3;

export class Settler {
  /** Settlements not written yet: waiting for the write under way, or for the database. */
  private waiting: Pending[] = [];
  /** Every settlement not written yet nor given up: waiting, or being written. */
  private readonly unwritten = new Set<Pending>();
  /** Of those, the ones held for the database. */
  private held = 0;
  private readonly heldWrittenListeners: Array<() => void> = [];
  private writing = 0;
  private scheduled = false;
  private retry: NodeJS.Timeout | undefined;
  /** Between writes again while the database does not answer. */
  private readonly pause = new Backoff(250, 5_000);
  private idleWaiters: Array<() => void> = [];
  /** While anything is unwritten: the leases of its rows are looked at (keepLeases). */
  private keeper: NodeJS.Timeout | undefined;
  private keeping = false;
  private closed = false;

  constructor(
    private readonly queue: MatchQueue,
    private readonly holder: string,
    /** How long the leases of this instance's claims run (µs). */
    private readonly leaseUs: number,
    private readonly clock: Clock,
    /** Each time a write is deferred (the database not answering, or full). */
    private readonly onUnavailable: (error: unknown) => void,
    /** Each time leases of unwritten rows could not be extended (tried again at the next look). */
    private readonly onLeasesNotKept: (error: unknown) => void = () => undefined,
  ) {}

  /**
   * Resolves once written, with the rows it settled and the subscriptions it disabled.
   * `leaseEnds`: when the first lease of its rows runs out (µs).
   */
  settle(settlement: Settlement, leaseEnds: number): Promise<Settled> {
    if (this.closed) return Promise.reject(new Error('the settler is closed'));
    const written = new Promise<Settled>((resolve, reject) => {
      const pending: Pending = { settlement, rows: rowsOf(settlement), leaseEnds, held: false, resolve, reject };
      this.unwritten.add(pending);
      this.waiting.push(pending);
    });
    this.keeper ??= setInterval(() => void this.keepLeases(), this.leaseUs / LOOKS_PER_LEASE / 1000).unref();
    this.writeSoon();
    return written;
  }

  /** Settlements not written yet: being written, or held. */
  get pending(): boolean {
    return this.unwritten.size > 0;
  }

  /** Outcomes wait for the database: no claim may be made until they are written. */
  get holding(): boolean {
    return this.held > 0;
  }

  /** Rows whose outcomes are held for the database (for the metrics). */
  get heldRows(): number {
    let rows = 0;
    for (const pending of this.unwritten) if (pending.held) rows += pending.rows.length;
    return rows;
  }

  /** The rows of settlements not written yet whose leases have run out by `now`: a claim made now leaves them out. */
  unwrittenPast(now: number): string[] {
    const rows: string[] = [];
    for (const pending of this.unwritten) if (pending.leaseEnds <= now) rows.push(...pending.rows);
    return rows;
  }

  /** `listener` runs each time the last held outcome is written: claims may be made again. */
  whenHeldWritten(listener: () => void): void {
    this.heldWrittenListeners.push(listener);
  }

  /** The database takes writes again: what is held is written now, not after the pause. */
  retryNow(): void {
    if (this.retry === undefined) return;
    clearTimeout(this.retry);
    this.retry = undefined;
    this.pause.reset();
    this.writeSoon();
  }

  /** Resolves when nothing is being written or waits to be. */
  idle(): Promise<void> {
    if (this.unwritten.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * At shutdown, once the runners have stopped (or their grace is over): gives up what still
   * waits for the database. The process ends with it: those rows are attempted again once their
   * leases are released or expire.
   */
  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.keeper);
    const given = this.waiting;
    this.waiting = [];
    for (const pending of given) this.done(pending, (p) => p.reject(new Error('not recorded: shutting down')));
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
      for (const pending of batch) this.done(pending, (p) => p.resolve(ownPart(settled, p.settlement)));
    } catch (error) {
      if (!isConditionOfTheDatabase(error) || this.closed) {
        for (const pending of batch) this.done(pending, (p) => p.reject(error));
      } else {
        this.onUnavailable(error);
        let newlyHeld = false;
        for (const pending of batch) newlyHeld = this.hold(pending) || newlyHeld;
        // Its leases may be about to run out: kept now rather than at the next look.
        if (newlyHeld) void this.keepLeases();
        // Held first: they go in the next write, before what came meanwhile.
        this.waiting.unshift(...batch);
        this.scheduleRetry();
      }
    } finally {
      this.writing--;
      if (this.waiting.length > 0) this.writeSoon();
    }
  }

  /** Whether `pending` was not held yet. */
  private hold(pending: Pending): boolean {
    if (pending.held) return false;
    pending.held = true;
    this.held++;
    return true;
  }

  /**
   * Extends, best effort, the leases of rows whose outcome is not written: a held outcome's, and
   * one on its way whose lease would run out before the next look (see the header). A failure
   * is told to `onLeasesNotKept`, and the next look tries again.
   */
  private async keepLeases(): Promise<void> {
    if (this.keeping) return;
    const now = this.clock();
    const nextLook = now + this.leaseUs / LOOKS_PER_LEASE;
    const rows: string[] = [];
    for (const pending of this.unwritten) if (pending.held || pending.leaseEnds <= nextLook) rows.push(...pending.rows);
    if (rows.length === 0) return;
    this.keeping = true;
    try {
      await this.queue.extendLeases(this.holder, rows, now + this.leaseUs);
    } catch (error) {
      this.onLeasesNotKept(error);
    } finally {
      this.keeping = false;
    }
  }

  /** `pending` is written or given up: `end` tells its caller. */
  private done(pending: Pending, end: (pending: Pending) => void): void {
    this.unwritten.delete(pending);
    if (pending.held) {
      pending.held = false;
      this.held--;
      if (this.held === 0) for (const listener of this.heldWrittenListeners) listener();
    }
    end(pending);
    if (this.unwritten.size === 0) {
      clearInterval(this.keeper);
      this.keeper = undefined;
      this.wakeIdle();
    }
  }

  private scheduleRetry(): void {
    if (this.retry !== undefined) return;
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

/** The rows a settlement changes or gives back. */
function rowsOf(settlement: Settlement): string[] {
  return [...settlement.changes.map((c) => c.uuid), ...(settlement.release ?? [])];
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
