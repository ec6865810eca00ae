/**
 * With new work handed over in memory (handoff.ts), a runner's claims mostly find nothing: the
 * queue then holds only retries coming due, other instances' work and what did not fit in the
 * handoff. A claim that found nothing is not repeated for `quietMs`, instead of after every
 * handed batch (it was 7% of the server's time under load, each one a scan and a write). A
 * runner busy with handed work still claims every `busyMs`, so that a steady stream of new
 * events cannot keep retries waiting.
 *
 * A claim may also find little because it left work out (a full lane's: lanes.ts): once one of
 * the lanes it left out has room again, the next claim goes at once, pacing or not.
 */
export class ClaimPacer {
  private quietUntil = 0;
  private lastClaim = -Infinity;
  private leftOut: ReadonlySet<string> = new Set();
  private roomNow = false;

  constructor(
    private readonly quietMs: number,
    private readonly busyMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** With no handed work. */
  mayClaim(): boolean {
    return this.roomNow || this.now() >= this.quietUntil;
  }

  /** With handed work to do as well. */
  mayClaimBesides(): boolean {
    return this.roomNow || this.now() - this.lastClaim >= this.busyMs;
  }

  /** `leftOut`: the lanes whose work it left out, when it found less than it asked for (there may be more). */
  claimed(found: number, leftOut: ReadonlySet<string> = new Set()): void {
    const now = this.now();
    this.lastClaim = now;
    this.quietUntil = found === 0 ? now + this.quietMs : 0;
    this.leftOut = leftOut;
    this.roomNow = false;
  }

  /** A lane has room (again): if the last claim left it out, the next one goes at once. */
  roomAgain(lane: string): void {
    if (this.leftOut.has(lane)) this.roomNow = true;
  }
}
