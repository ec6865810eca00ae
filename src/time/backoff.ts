/**
 * An exponential back-off: each pause twice the one before, from `firstMs` up to `maxMs`, and
 * back to `firstMs` once whatever was failing works again. Jitter, where wanted, is the
 * caller's: it spreads its own kind of retries (see runners/retry-schedule.ts for deliveries).
 */
export class Backoff {
  private currentMs: number;

  constructor(
    private readonly firstMs: number,
    private readonly maxMs: number,
  ) {
    this.currentMs = Math.min(firstMs, maxMs);
  }

  /** The pause to make now; the next one will be twice as long (at most `maxMs`). */
  next(): number {
    const pauseMs = this.currentMs;
    this.currentMs = Math.min(this.maxMs, this.currentMs * 2);
    return pauseMs;
  }

  /** It worked: the next failure pauses `firstMs` again. */
  reset(): void {
    this.currentMs = Math.min(this.firstMs, this.maxMs);
  }
}
