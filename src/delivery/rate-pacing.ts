/**
 * The delivery runner's rate limits, as the runner core paces its lanes' work with them. A
 * subscription with a `rate_limit`, or a target that allowed only so many deliveries a minute in
 * its consent, has its rows started no faster than the lower of the two (rate-limiter.ts): the
 * others of its lane go past them, and it keeps at most a second's worth waiting in memory
 * (claims leave out the rest), so that it holds back neither its origin nor the runner.
 */
import type { Pacing } from '../runners/runner-core.js';
import type { Clock } from '../time/clock.js';
import { RateLimiter } from './rate-limiter.js';

/** A row of a subscription, with the subscription's rate (deliveries a second; null: none). */
export interface Paced {
  subscription: { uuid: string };
  rate: number | null;
}

export class RatePacing implements Pacing<Paced> {
  private readonly limiter: RateLimiter;
  /** Rows waiting, by subscription: only subscriptions with some are looked for when one changes. */
  private readonly waitingOf = new Map<string, number>();
  /** The rate of the subscriptions with rows waiting that have one. */
  private readonly rateOf = new Map<string, number>();
  private wake: { timer: NodeJS.Timeout; at: number } | undefined;

  /** `dispatch`: starts what may start, run once the first row held back by its rate may. */
  constructor(
    private readonly clock: Clock,
    private readonly dispatch: () => void,
  ) {
    this.limiter = new RateLimiter(clock);
  }

  /** More than a second's worth of its subscription's rate: the queue keeps it. */
  full({ subscription, rate }: Paced): boolean {
    return rate !== null && (this.waitingOf.get(subscription.uuid) ?? 0) >= rate;
  }

  waits({ subscription, rate }: Paced, count: 1 | -1): void {
    const waiting = (this.waitingOf.get(subscription.uuid) ?? 0) + count;
    if (waiting > 0) {
      this.waitingOf.set(subscription.uuid, waiting);
      if (count === 1 && rate !== null) this.rateOf.set(subscription.uuid, rate);
      return;
    }
    this.waitingOf.delete(subscription.uuid);
    this.rateOf.delete(subscription.uuid);
  }

  ready({ subscription, rate }: Paced): boolean {
    if (rate === null || this.limiter.tryStart(subscription.uuid, rate)) return true;
    this.wakeIn(this.limiter.waitUs(subscription.uuid));
    return false;
  }

  /** Whether rows of the subscription wait here. */
  hasWaiting(subscription: string): boolean {
    return this.waitingOf.has(subscription);
  }

  /** Subscriptions with a second's worth of rows (at their rate) waiting here: claims leave them out. */
  saturated(): string[] {
    return [...this.rateOf].filter(([uuid, rate]) => (this.waitingOf.get(uuid) ?? 0) >= rate).map(([uuid]) => uuid);
  }

  stop(): void {
    if (this.wake !== undefined) clearTimeout(this.wake.timer);
    this.wake = undefined;
  }

  /** Dispatches again in `waitUs`, unless a dispatch comes sooner already. */
  private wakeIn(waitUs: number): void {
    const at = this.clock() + waitUs;
    if (this.wake !== undefined && this.wake.at <= at) return;
    if (this.wake !== undefined) clearTimeout(this.wake.timer);
    const timer = setTimeout(
      () => {
        this.wake = undefined;
        this.dispatch();
      },
      Math.ceil(waitUs / 1000),
    );
    this.wake = { timer, at };
  }
}
