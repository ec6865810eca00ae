/**
 * With new work handed over in memory (handoff.ts), a stage's claims mostly find nothing: the
 * queue then holds only retries coming due and what did not fit in the handoff. A claim that
 * found nothing is not repeated for `quietMs`, instead of after every handed batch (it was
 * 7% of the server's time under load, each one a scan and a write).
 */
export class ClaimPacer {
  private quietUntil = 0;

  constructor(
    private readonly quietMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  mayClaim(): boolean {
    return this.now() >= this.quietUntil;
  }

  claimed(found: number): void {
    this.quietUntil = found === 0 ? this.now() + this.quietMs : 0;
  }
}
