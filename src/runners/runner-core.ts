/**
 * The runner core: what the policy and delivery runners do alike, which is all of a round and
 * of an attempt but the runner's own strategy (AttemptStrategy). A round gives back rows whose
 * leases no longer leave room for an exchange, takes rows in (handed over first, then claimed:
 * next-batch.ts), has the strategy turn them into work, puts it in its lanes (lanes.ts), and
 * starts what has room. An attempt runs under its span; its lane's slot is freed as it ends and
 * the lane's next work starts; its rows are settled as after-attempt.ts says. The strategy says
 * what a lane is, what one attempt is (a policy question per (event, user); a delivery to a
 * destination), and what the runner does around it (an origin's health and rate limits; allowed
 * rows handed on to delivery).
 */
import type { Settled } from '../db/stores/match-queue.js';
import type { ClaimFilter, Lease, Stage } from '../db/stores/matches.js';
import type { MatchesTable } from '../db/tables.js';
import type { TraceSpan } from '../tracing/tracing.js';
import {
  type AfterAttempt,
  afterAttempt,
  type AttemptedFor,
  type AttemptOutcome,
  CANCELLED,
  settlementOf,
  UNTRIED,
} from './after-attempt.js';
import type { HandedMatch } from './handoff.js';
import { Lanes } from './lanes.js';
import { type Batch, type ClaimSource, nextBatch } from './next-batch.js';
import { LeaseRoom, type Runner, RunnerLoop } from './runner-loop.js';
import type { RunnerOptions } from './runner-options.js';

/** What the core holds: waiting in its lane, then attempted once. */
export interface Work {
  /** The lane it waits and runs in (a target's origin, a user). */
  readonly lane: string;
  /** The rows one attempt is made for: a delivery's one; the rows of an (event, user), asked about together. */
  readonly rows: readonly MatchesTable[];
}

/** What came of one attempt, and how long it took (ms). */
export interface AttemptResult {
  outcome: AttemptOutcome;
  durationMs: number;
}

/** An attempt that was made, ended `at`; `after`: what comes of its rows. */
export interface EndedAttempt<W extends Work, R extends AttemptResult> {
  work: W;
  result: R;
  after: AfterAttempt;
  at: number;
}

/**
 * How an ended attempt's rows are settled: here, as the attempt at `subscription`'s destination
 * when there was one (disabled when the outcome says so), or not here at all (`handedOn`: the
 * policy runner's allowed rows go on to the delivery runner in memory).
 */
export type Settling = { handedOn: true } | { handedOn?: false; subscription?: AttemptedFor };

/** What holds a lane's work back one piece at a time, beyond the lane's slots (the delivery runner's rate limits). */
export interface Pacing<W> {
  /** Whether the work would wait here past its share: the queue keeps it until there is room. */
  full(work: W): boolean;
  /** The work came to wait here (1), or stopped waiting (-1: started, or taken out). */
  waits(work: W, count: 1 | -1): void;
  /** Whether the work may start now; refused, it keeps its place, and the work behind it may start. */
  ready(work: W): boolean;
}

/** A runner's own part: what the core asks of it, round by round and attempt by attempt. */
export interface AttemptStrategy<W extends Work, R extends AttemptResult> {
  /** How many of a lane's attempts may run at once now. */
  slots(lane: string): number;
  /** What a claim leaves out so as to leave out the work of lanes `leftOut` (full, or down). */
  claimFilter(leftOut: ReadonlySet<string>): ClaimFilter;
  /** How many rows a claim leaving out `leftOut` may take at most (next-batch.ts); none: no bound but the batch. */
  claimRoom?(leftOut: ReadonlySet<string>): number;
  /**
   * Claimed work a lane takes in past full (claims leave it out from full on): the room
   * `claimRoom` counts for lanes not seen yet, which a claim's rows may turn out to be a full
   * lane's. Given back instead, each would be a write for nothing, and a claim again.
   */
  laneSlack?(lane: string): number;
  /** Rows taken in, with their events, as the work to attempt; rows not to be tried it cancels or gives back itself. */
  workOf(taken: readonly HandedMatch[]): Promise<W[]>;
  /** Reads what `workOf` will need of these rows, at the same time as their events are read. */
  prepare?(rows: readonly MatchesTable[]): Promise<unknown>;
  /** The attempt's span, a child of its event's receive span: none without tracing, or when no call is made. */
  openSpan(work: W): TraceSpan | undefined;
  /** One attempt; `traceparent`: its span's, for the other side to continue. Never rejects. */
  attempt(work: W, traceparent: string | undefined): Promise<R>;
  endSpan(span: TraceSpan, result: R): void;
  /** As an attempt ends, before its slot is freed and its rows settled: what the runner does then, and how they are settled. */
  ended(attempt: EndedAttempt<W, R>): Settling;
  /** Once the rows are settled (`settled`), or handed on (undefined). */
  settled(attempt: EndedAttempt<W, R>, settled: Settled | undefined): void;

  /** Takes in nothing this round (the policy runner while delivery overflows). */
  paused?(): boolean;
  /** Lanes whose work claims leave out though they have room (origins that are down). */
  downLanes?(): Iterable<string>;
  /** This round's rule for the handed rows to leave in the handoff rather than take. */
  stays?(now: number): (item: HandedMatch) => boolean;
  /** Rows claimed besides the batch (the delivery runner's probes of down origins). */
  probes?(now: number): Promise<MatchesTable[]>;
  /** At each look for leases running short (at most every 250 ms), before it. */
  tidy?(now: number): void;
  /** How many of a lane's `free` slots may be used now (an origin that stopped answering is only probed). */
  allowance?(lane: string, free: number, now: number): number;
  pacing?: Pacing<W>;
}

/** Rows a claim leaves out by uuid at most: both databases take thousands of parameters a statement. */
const MAX_LEFT_OUT = 1_000;

const NOTHING: Batch = { handed: [], claimed: [] };

export class RunnerCore<W extends Work, R extends AttemptResult> {
  readonly leaseRoom: LeaseRoom;
  private readonly loop: RunnerLoop;
  private readonly waiting: Lanes<W>;

  /** `timeoutMs`: how long one exchange takes at most. */
  constructor(
    private readonly stage: Stage,
    private readonly options: RunnerOptions,
    timeoutMs: number,
    private readonly strategy: AttemptStrategy<W, R>,
  ) {
    this.leaseRoom = new LeaseRoom(timeoutMs);
    this.waiting = new Lanes<W>((lane) => strategy.slots(lane));
    this.loop = new RunnerLoop(
      () => this.intake(),
      options.settler,
      options,
      () => this.waiting.size > 0 || (options.inbox?.size ?? 0) > 0 || !isEmpty(strategy.downLanes?.()),
      options.clock,
    );
    // Claims were held back for the outcomes kept (settler.ts): they may be made again.
    options.settler.whenHeldWritten(() => this.wake());
  }

  /** What every runner offers. */
  runner(): Runner {
    return {
      intake: () => this.intake(),
      idle: () => this.loop.idle(),
      start: () => this.loop.start(),
      wake: () => this.loop.wake(),
      stop: () => this.loop.stop(),
    };
  }

  /** One round: gives back what waited too long, takes rows in, starts what may start; resolves with the rows taken in. */
  private async intake(): Promise<number> {
    const now = this.options.clock();
    this.giveBackExpiring(now);
    if (this.strategy.paused?.() === true) return 0;
    return this.takeIn(now, Math.min(this.options.batchSize, this.options.capacity - this.waiting.size));
  }

  /**
   * Takes in at most `room` rows (none when there is no room; the strategy's probes all the
   * same), puts their work in its lanes, then starts what may start. Rows taken but not placed
   * go back to the queue rather than wait out their leases (a database that does not answer
   * gets them with the settler's retries). A claim that failed is thrown once the rows handed
   * over are placed. No claim is made while outcomes are held (`mayClaim`).
   */
  private async takeIn(now: number, room: number): Promise<number> {
    const claims = this.mayClaim ? this.claimSource(now) : undefined;
    const batch = room > 0 ? await nextBatch(this.options, now, room, claims, this.strategy.stays?.(now)) : NOTHING;
    const taken = [...batch.handed.map((w) => w.row), ...batch.claimed];
    try {
      const probes = (await this.strategy.probes?.(now)) ?? [];
      taken.push(...probes);
      const [claimed] = await Promise.all([this.withEvents([...batch.claimed, ...probes]), this.strategy.prepare?.(taken)]);
      this.place(await this.strategy.workOf([...batch.handed, ...claimed]), new Set(batch.claimed));
    } catch (error) {
      this.giveBack(taken);
      throw error;
    }
    this.dispatch();
    if (batch.claimFailed !== undefined) throw batch.claimFailed;
    return taken.length;
  }

  private claimSource(now: number): ClaimSource {
    return {
      leftOut: () => new Set([...this.waiting.fullKeys(), ...(this.strategy.downLanes?.() ?? [])]),
      claim: (limit, leftOut) => this.claim(now, limit, this.strategy.claimFilter(leftOut)),
      ...(this.strategy.claimRoom === undefined ? {} : { room: (leftOut: ReadonlySet<string>) => this.strategy.claimRoom!(leftOut) }),
    };
  }

  /**
   * Claimed rows with their events. The one rule for a purged event, at either stage: a row
   * whose event is gone is dropped, and nothing is written of it. Its event was purged since
   * the claim (eventpurge --force takes events whose rows wait or are in flight), and the row
   * went with it (ON DELETE CASCADE): there is nothing left to settle. Cancelling it instead
   * (the delivery runner did) is a settlement that changes nothing and, while the database
   * refuses writes, is held like any outcome, keeping this instance from claiming. Work whose
   * event is already in memory (handed over, waiting in a lane, in flight) is attempted all the
   * same: what comes of it changes nothing either, the settlement leaving out rows that are gone.
   */
  private async withEvents(claimed: readonly MatchesTable[]): Promise<HandedMatch[]> {
    if (claimed.length === 0) return [];
    const events = await this.options.queue.events(claimed.map((row) => row.event_uuid));
    return claimed.flatMap((row) => {
      const event = events.get(row.event_uuid);
      return event === undefined ? [] : [{ row, event }];
    });
  }

  /**
   * Puts work in its lane; what finds its lane full (past its slack, for rows of `claimed`) or
   * its pacing's share goes back to the queue, which keeps it until there is room.
   */
  private place(work: readonly W[], claimed: ReadonlySet<MatchesTable>): void {
    const full: W[] = [];
    for (const w of work) {
      const slack = claimed.has(w.rows[0]!) ? (this.strategy.laneSlack?.(w.lane) ?? 0) : 0;
      if (this.waiting.room(w.lane) + slack <= 0 || this.strategy.pacing?.full(w) === true) {
        full.push(w);
        continue;
      }
      this.strategy.pacing?.waits(w, 1);
      this.waiting.add(w.lane, w);
    }
    this.giveBack(rowsOf(full));
  }

  /** Starts what may start: in every lane, or in `only` (the one whose slot just came free). */
  dispatch(only?: string): void {
    if (this.loop.stopping) return;
    const now = this.options.clock();
    const { strategy } = this;
    const started = this.waiting.start(
      (lane, free) => strategy.allowance?.(lane, free, now) ?? free,
      only,
      (work) => strategy.pacing?.ready(work) ?? true,
    );
    for (const { item: work } of started) {
      strategy.pacing?.waits(work, -1);
      if (work.rows.some((row) => this.leaseRoom.tooShort(row, now))) {
        this.waiting.finished(work.lane);
        this.giveBack(work.rows);
        continue;
      }
      this.track(this.attempt(work));
    }
  }

  private async attempt(work: W): Promise<void> {
    const span = this.strategy.openSpan(work);
    const result = await this.strategy.attempt(work, span?.traceparent);
    if (span !== undefined) this.strategy.endSpan(span, result);
    if (result.outcome.kind === 'untried') {
      // No connection came free in time for the exchange to end within the lease: back to the
      // queue in its place.
      this.waiting.finished(work.lane);
      this.giveBack(work.rows);
      return;
    }
    const at = this.options.clock();
    const after = afterAttempt(this.stage, work.rows, result.outcome, { at, durationMs: result.durationMs }, this.options.schedule);
    if (after.change?.state === this.stage && after.change.due !== undefined) this.loop.idleWait.scheduled(after.change.due);
    const ended = { work, result, after, at };
    const settling = this.strategy.ended(ended);
    this.waiting.finished(work.lane);
    const written = settling.handedOn === true ? undefined : this.settle(work.rows, after, settling.subscription);
    // The slot is free: the lane's next work starts now, and the runner may take in more.
    this.dispatch(work.lane);
    this.wake();
    try {
      const settled = await written;
      // Operational events written with it wait in the queue, due now.
      if (settled !== undefined && settled.notified > 0) this.wake();
      this.strategy.settled(ended, settled);
    } catch (error) {
      // Not recorded, and not for want of the database (its outcome would be held until then):
      // the rows stay leased, and are tried again once their leases expire.
      this.options.onError(error);
    }
  }

  /**
   * At most every 250 ms: the work waiting whose leases no longer have room for an exchange
   * goes back to the queue, keeping its place.
   */
  private giveBackExpiring(now: number): void {
    if (!this.leaseRoom.checkDue(now)) return;
    this.strategy.tidy?.(now);
    this.giveBack(rowsOf(this.takeOutWaiting((work) => work.rows.some((row) => this.leaseRoom.tooShort(row, now)))));
  }

  /** The lanes, as the strategy may look at them. */
  get lanes(): Pick<Lanes<W>, 'has' | 'room'> {
    return this.waiting;
  }

  /** Takes the waiting work `which` picks out of its lanes, and returns it. */
  takeOutWaiting(which: (work: W) => boolean): W[] {
    const taken = this.waiting.removeWaiting(which);
    for (const work of taken) this.strategy.pacing?.waits(work, -1);
    return taken;
  }

  /** Tracks work on rows until it ends: stop and idle wait for it. */
  private track(work: Promise<void>): void {
    this.loop.inFlight.add(work);
  }

  wake(): void {
    this.loop.wake();
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
    const claimed = this.options.queue.claim(
      this.stage,
      this.lease(now),
      limit,
      unwritten.length === 0 ? filter : { ...filter, excludeMatches: unwritten },
    );
    return claimed.then((rows) => {
      this.loop.idleWait.claimed(now);
      return rows;
    });
  }

  /** The lease of a claim made `now`. */
  private lease(now: number): Lease {
    return { holder: this.options.holder, now, durationUs: this.options.leaseUs };
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
}

function isEmpty(lanes: Iterable<string> | undefined): boolean {
  if (lanes === undefined) return true;
  for (const _ of lanes) return false;
  return true;
}

function rowsOf(work: readonly Work[]): MatchesTable[] {
  return work.flatMap((w) => w.rows);
}

/** When the first of the rows' leases runs out (µs); a row without one is free to claim already. */
function leaseEnds(rows: readonly MatchesTable[]): number {
  return Math.min(...rows.map((row) => row.locked_until ?? -Infinity));
}
