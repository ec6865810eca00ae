/**
 * What the policy and delivery runners do alike with the rows they take, whatever they then do
 * with them: take rows in (handed over first, then claimed: next-batch.ts) and give them all
 * back when they cannot be placed; give back rows whose leases no longer leave room for an
 * exchange; give rows back untried, cancel them, and settle an attempt as after-attempt.ts says.
 * Each runner keeps only what is its own: how it groups and lanes its work, and what one
 * attempt is (a policy question per (event, user); a delivery to a destination).
 */
import type { Settled } from '../db/match-queue.js';
import type { ClaimFilter, Lease, Stage } from '../db/matches.js';
import type { MatchesTable } from '../db/tables.js';
import { type AfterAttempt, type AttemptedFor, CANCELLED, settlementOf, UNTRIED } from './after-attempt.js';
import type { HandedMatch } from './handoff.js';
import { type Batch, type ClaimSource, nextBatch } from './next-batch.js';
import { LeaseRoom, type Runner, RunnerLoop } from './runner-loop.js';
import type { RunnerOptions } from './runner-options.js';

/** Rows a claim leaves out by uuid at most: both databases take thousands of parameters a statement. */
const MAX_LEFT_OUT = 1_000;

export class RunnerCore {
  readonly leaseRoom: LeaseRoom;
  private readonly loop: RunnerLoop;

  /** `timeoutMs`: how long one exchange takes at most; `intake`: the runner's round. */
  constructor(
    private readonly stage: Stage,
    private readonly options: RunnerOptions,
    timeoutMs: number,
    private readonly intake: () => Promise<number>,
  ) {
    this.leaseRoom = new LeaseRoom(timeoutMs);
    this.loop = new RunnerLoop(intake, options.settler, options);
    // Claims were held back for the outcomes kept (settler.ts): they may be made again.
    options.settler.whenHeldWritten(() => this.wake());
  }

  /** Taking nothing more: no new attempt may start. */
  get stopping(): boolean {
    return this.loop.stopping;
  }

  /** Tracks an attempt (or any work on rows) until it ends: stop and idle wait for it. */
  track(work: Promise<void>): void {
    this.loop.inFlight.add(work);
  }

  wake(): void {
    this.loop.wake();
  }

  /** The lease of a claim made `now`. */
  lease(now: number): Lease {
    return { holder: this.options.holder, now, durationUs: this.options.leaseUs };
  }

  /**
   * Whether a claim may be made: not while outcomes wait for the database. Their rows' leases
   * may have run out, and they are to be written before anything more is taken (settler.ts).
   */
  get mayClaim(): boolean {
    return !this.options.settler.holding;
  }

  /**
   * Claims at most `limit` due rows of this stage under a lease made `now`, as `filter` says,
   * and never a row whose outcome is not written yet: its lease may have run out meanwhile.
   */
  claim(now: number, limit: number, filter: ClaimFilter = {}): Promise<MatchesTable[]> {
    const unwritten = this.options.settler.unwrittenPast(now);
    // So many can only be a database too slow to take writes: claim nothing more for now.
    if (unwritten.length > MAX_LEFT_OUT) return Promise.resolve([]);
    return this.options.queue.claim(
      this.stage,
      this.lease(now),
      limit,
      unwritten.length === 0 ? filter : { ...filter, excludeMatches: unwritten },
    );
  }

  /**
   * Takes in at most `room` rows (none when there is no room), has `place` put them where they
   * wait, then `dispatch` start what may start. `place` may take more rows of its own, and
   * says so with `alsoTaken`. Rows taken but not placed go back to the queue rather than wait
   * out their leases (a database that does not answer gets them with the settler's retries). A
   * claim that failed is thrown once the rows handed over are placed. Handed rows `stays` picks
   * are left in the handoff. No claim is made while outcomes are held (`mayClaim`). Resolves
   * with the rows taken in.
   */
  async takeIn(
    now: number,
    room: number,
    claims: ClaimSource,
    place: (batch: Batch, alsoTaken: (rows: readonly MatchesTable[]) => void) => Promise<void>,
    dispatch: () => void,
    stays?: (item: HandedMatch) => boolean,
  ): Promise<number> {
    const batch: Batch =
      room > 0 ? await nextBatch(this.options, now, room, this.mayClaim ? claims : undefined, stays) : { handed: [], claimed: [] };
    const taken = [...batch.handed.map((w) => w.row), ...batch.claimed];
    try {
      await place(batch, (rows) => taken.push(...rows));
    } catch (error) {
      this.giveBack(taken);
      throw error;
    }
    dispatch();
    if (batch.claimFailed !== undefined) throw batch.claimFailed;
    return taken.length;
  }

  /**
   * At most every 250 ms: `takeOut` takes the rows waiting in memory that `tooShort` picks
   * (their leases no longer have room for an exchange) out of where they wait, and they go back
   * to the queue, keeping their place.
   */
  giveBackExpiring(now: number, takeOut: (tooShort: (row: MatchesTable) => boolean) => readonly MatchesTable[]): void {
    if (!this.leaseRoom.checkDue(now)) return;
    this.giveBack(takeOut((row) => this.leaseRoom.tooShort(row, now)));
  }

  /** Whether rows about to start still have time for an exchange and its settlement. */
  mayStart(rows: readonly MatchesTable[], now: number): boolean {
    return !rows.some((row) => this.leaseRoom.tooShort(row, now));
  }

  /** Rows taken out of where they wait (or never put there) go back to the queue, untried, with the next settlement. */
  giveBack(rows: readonly MatchesTable[]): void {
    if (rows.length === 0) return;
    this.track(this.settle(rows, UNTRIED).then(() => undefined, this.options.onError));
  }

  /** Rows not to be tried (their subscription is gone); `onCancelled` hears of each one settled so. */
  cancel(rows: readonly MatchesTable[], onCancelled: (row: MatchesTable) => void = () => undefined): void {
    if (rows.length === 0) return;
    this.track(
      this.settle(rows, CANCELLED).then((settled) => {
        for (const row of rows) if (settled.rows.has(row.uuid)) onCancelled(row);
      }, this.options.onError),
    );
  }

  /** Records `after` for the rows of one attempt; `subscription`: whose destination it was, disabled when `after` says so. */
  settle(rows: readonly MatchesTable[], after: AfterAttempt, subscription?: AttemptedFor): Promise<Settled> {
    return this.options.settler.settle(settlementOf(this.stage, rows, after, subscription), leaseEnds(rows));
  }

  /** What every runner offers. */
  runner(): Runner {
    return {
      intake: this.intake,
      idle: () => this.loop.idle(),
      start: () => this.loop.start(),
      wake: () => this.loop.wake(),
      stop: () => this.loop.stop(),
    };
  }
}

/** When the first of the rows' leases runs out (µs); a row without one is free to claim already. */
function leaseEnds(rows: readonly MatchesTable[]): number {
  return Math.min(...rows.map((row) => row.locked_until ?? -Infinity));
}
