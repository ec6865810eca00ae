/**
 * With new work handed over in memory (handoff.ts), a runner's claims mostly find nothing: the
 * queue then holds only retries coming due, other instances' work and what did not fit in the
 * handoff. A claim that found nothing is not repeated for `quietMs`, instead of after every
 * handed batch (it was 7% of the server's time under load, each one a scan and a write). A
 * runner busy with handed work still claims every `busyMs`, so that a steady stream of new
 * events cannot keep retries waiting.
 *
 * A claim leaves out the work of full lanes (lanes.ts), and reads past every row of theirs to
 * find the others: with a burst's backlog in the queue, 13–25 ms on SQLite, holding every
 * commit behind it, only to find nothing when the lanes it leaves out are all the work there
 * is. So whether to claim is asked with the lanes a claim made now would leave out:
 * - one of the lanes the last claim left out has room now: at once, pacing or not;
 * - lanes are full now that the last claim did not leave out (it filled them): not before
 *   `quietMs` since it, whatever it found;
 * - while claims keep finding nothing with lanes left out, each waits twice as long as the one
 *   before, up to `busyMs`.
 */
import { RUNNER_POLL_MS } from './runner-loop.js';

/** A runner's claim that found nothing is not repeated sooner. */
export const QUIET_CLAIM_MS = 100;
/** A runner busy with new work still claims this often, for retries and other instances' rows. */
export const BUSY_CLAIM_MS = RUNNER_POLL_MS;

const NONE: ReadonlySet<string> = new Set();

export class ClaimPacer {
  private quietUntil = 0;
  private lastClaim = -Infinity;
  private leftOut: ReadonlySet<string> = NONE;
  private foundAll = false;
  /** Claims in a row that found nothing with lanes left out. */
  private emptyLeavingOut = 0;

  constructor(
    private readonly quietMs: number,
    private readonly busyMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** With no handed work; `leftOutNow`: the lanes a claim made now would leave out. */
  mayClaim(leftOutNow: ReadonlySet<string> = NONE): boolean {
    return this.roomAgain(leftOutNow) || (this.now() >= this.quietUntil && !this.filledSince(leftOutNow));
  }

  /** With handed work to do as well. */
  mayClaimBesides(leftOutNow: ReadonlySet<string> = NONE): boolean {
    return this.roomAgain(leftOutNow) || this.now() - this.lastClaim >= this.busyMs;
  }

  /**
   * With the handoff overflowing: at once while the last claim found all it asked for or left
   * nothing out, as long as no lane it did not leave out is full now; otherwise (what it did
   * not leave out was all there was) as with no handed work.
   */
  mayClaimOverflowing(leftOutNow: ReadonlySet<string> = NONE): boolean {
    if (this.roomAgain(leftOutNow)) return true;
    if (this.foundAll || this.leftOut.size === 0) return !this.filledSince(leftOutNow);
    const now = this.now();
    return now >= this.quietUntil && now - this.lastClaim >= this.quietMs;
  }

  /** `found` of the `asked` rows, leaving out the work of lanes `leftOut`. */
  claimed(found: number, asked: number, leftOut: ReadonlySet<string> = NONE): void {
    const now = this.now();
    this.lastClaim = now;
    this.foundAll = found >= asked;
    this.leftOut = leftOut;
    this.emptyLeavingOut = found === 0 && leftOut.size > 0 ? this.emptyLeavingOut + 1 : 0;
    const quietMs = Math.min(this.quietMs * 2 ** Math.max(0, this.emptyLeavingOut - 1), Math.max(this.quietMs, this.busyMs));
    this.quietUntil = found === 0 ? now + quietMs : 0;
  }

  /** Whether a lane the last claim left out would be taken in by a claim made now. */
  private roomAgain(leftOutNow: ReadonlySet<string>): boolean {
    for (const lane of this.leftOut) if (!leftOutNow.has(lane)) return true;
    return false;
  }

  /** Whether, within `quietMs` of the last claim, a claim made now would leave out a lane that one did not. */
  private filledSince(leftOutNow: ReadonlySet<string>): boolean {
    if (this.now() - this.lastClaim >= this.quietMs) return false;
    for (const lane of leftOutNow) if (!this.leftOut.has(lane)) return true;
    return false;
  }
}
