/**
 * With new work handed over in memory (handoff.ts), a stage's claims mostly find nothing: the
 * queue then holds only retries coming due, other instances' work and what did not fit in the
 * handoff. A claim that found nothing is not repeated for `quietMs`, instead of after every
 * handed batch (it was 7% of the server's time under load, each one a scan and a write). A
 * stage busy with handed work still claims every `busyMs`, so that a steady stream of new
 * events cannot keep retries waiting.
 */
export class ClaimPacer {
  private quietUntil = 0;
  private lastClaim = -Infinity;

  constructor(
    private readonly quietMs: number,
    private readonly busyMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** With no handed work. */
  mayClaim(): boolean {
    return this.now() >= this.quietUntil;
  }

  /** With handed work to do as well. */
  mayClaimBesides(): boolean {
    return this.now() - this.lastClaim >= this.busyMs;
  }

  claimed(found: number): void {
    const now = this.now();
    this.lastClaim = now;
    this.quietUntil = found === 0 ? now + this.quietMs : 0;
  }
}
