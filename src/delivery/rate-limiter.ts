/**
 * Deliveries per second to one subscription's target, held per instance: starts are spaced
 * evenly, one every 1/rate seconds (a token bucket holding a single token), so no second ever
 * sees more than the rate start. A delivery over it is not refused, only not started yet: the
 * runner leaves it waiting and asks again when `waitUs` says.
 */
import type { Clock } from '../time/clock.js';

/**
 * The limit that holds when several apply (the subscription's `rate_limit`, and the rate its
 * target allowed in the consent handshake): the lowest; null when none does.
 */
export function lowestLimit(...limits: ReadonlyArray<number | null | undefined>): number | null {
  const set = limits.filter((limit): limit is number => typeof limit === 'number');
  return set.length === 0 ? null : Math.min(...set);
}

/** Keys past their wait are forgotten once this many are kept: they start afresh, as they would anyway. */
const SWEEP_ABOVE = 1_024;

export class RateLimiter {
  /** By key: the earliest time (µs) the next start may be. */
  private readonly nextStart = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /** Whether one more start of `key` fits `perSecond` now; if so it is counted. */
  tryStart(key: string, perSecond: number): boolean {
    const now = this.clock();
    if ((this.nextStart.get(key) ?? now) > now) return false;
    if (this.nextStart.size >= SWEEP_ABOVE) this.sweep(now);
    this.nextStart.set(key, now + 1_000_000 / perSecond);
    return true;
  }

  /** How long (µs) until `key` may start again; 0 when it may now. */
  waitUs(key: string): number {
    const next = this.nextStart.get(key);
    return next === undefined ? 0 : Math.max(0, next - this.clock());
  }

  private sweep(now: number): void {
    for (const [key, next] of this.nextStart) if (next <= now) this.nextStart.delete(key);
  }
}
