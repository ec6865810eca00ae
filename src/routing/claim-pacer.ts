/**
 * With new work handed over in memory (handoff.ts), a runner's claims mostly find nothing: the
 * queue then holds only retries coming due, other instances' work and what did not fit in the
 * handoff. A claim that found nothing is not repeated for `quietMs`, instead of after every
 * handed batch (it was 7% of the server's time under load, each one a scan and a write). A
 * runner busy with handed work still claims every `busyMs`, so that a steady stream of new
 * events cannot keep retries waiting.
 *
 * A claim may also find little because it left work out (a full lane's: lanes.ts): once a
 * claim made now would take in a lane the last one left out (it has room again), the next
 * claim goes at once, pacing or not. That is asked when the claim would be made, with the
 * lanes it would leave out then: a lane that had room for a moment and was filled again by
 * handed rows does not make a claim read past the same left-out rows to find nothing.
 */
const NONE: ReadonlySet<string> = new Set();

export class ClaimPacer {
  private quietUntil = 0;
  private lastClaim = -Infinity;
  private leftOut: ReadonlySet<string> = NONE;

  constructor(
    private readonly quietMs: number,
    private readonly busyMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** With no handed work; `leftOutNow`: the lanes a claim made now would leave out. */
  mayClaim(leftOutNow: ReadonlySet<string> = NONE): boolean {
    return this.roomAgain(leftOutNow) || this.now() >= this.quietUntil;
  }

  /** With handed work to do as well. */
  mayClaimBesides(leftOutNow: ReadonlySet<string> = NONE): boolean {
    return this.roomAgain(leftOutNow) || this.now() - this.lastClaim >= this.busyMs;
  }

  /**
   * With the handoff overflowing: at once, unless the last claim left lanes out and found less
   * than it asked for. Then what it did not leave out was all there was, and asking again
   * before one of those lanes has room would read past the same left-out rows to find nothing
   * (a burst's whole backlog, each time); new rows of other lanes wait `quietMs` at most.
   */
  mayClaimOverflowing(leftOutNow: ReadonlySet<string> = NONE): boolean {
    return this.leftOut.size === 0 || this.roomAgain(leftOutNow) || this.now() - this.lastClaim >= this.quietMs;
  }

  /** `leftOut`: the lanes whose work it left out, when it found less than it asked for (there may be more). */
  claimed(found: number, leftOut: ReadonlySet<string> = NONE): void {
    const now = this.now();
    this.lastClaim = now;
    this.quietUntil = found === 0 ? now + this.quietMs : 0;
    this.leftOut = leftOut;
  }

  /** Whether a lane the last claim left out would be taken in by a claim made now. */
  private roomAgain(leftOutNow: ReadonlySet<string>): boolean {
    for (const lane of this.leftOut) if (!leftOutNow.has(lane)) return true;
    return false;
  }
}
