/**
 * Which target origins have stopped answering. After a few tries in a row that got no answer at
 * all (connection refused or reset, time-out, no such name), an origin is down: it is tried at
 * most once a second (a probe, one delivery in flight), and its other deliveries wait, keeping
 * their place and their retry schedule, until a probe gets an answer. Without this, 20,000
 * queued deliveries to a refused port made ~80,000 connection attempts in 85 s. Any HTTP
 * answer, even a 500, means the origin is up: what the status means is the delivery's business.
 */
/** Tries in a row without an answer that make an origin down. */
export const DOWN_AFTER = 3;
/** How often a down origin is tried (µs). */
export const PROBE_EVERY_US = 1_000_000;

interface Health {
  failures: number;
  nextProbe: number;
}

export class OriginHealth {
  private readonly origins = new Map<string, Health>();

  isDown(origin: string): boolean {
    return (this.origins.get(origin)?.failures ?? 0) >= DOWN_AFTER;
  }

  /** How many deliveries may start now: all its free slots for an origin that is up; for a down one, a probe once a second. */
  allowance(origin: string, free: number, running: number, now: number): number {
    const health = this.origins.get(origin);
    if (!health || health.failures < DOWN_AFTER) return free;
    if (running > 0 || now < health.nextProbe) return 0;
    health.nextProbe = now + PROBE_EVERY_US;
    return 1;
  }

  /** Down origins whose probe is due and that have nothing to probe with: `hasWork` says. */
  probesDue(now: number, hasWork: (origin: string) => boolean): string[] {
    const due: string[] = [];
    for (const [origin, health] of this.origins) {
      if (health.failures >= DOWN_AFTER && now >= health.nextProbe && !hasWork(origin)) due.push(origin);
    }
    return due;
  }

  answered(origin: string): void {
    this.origins.delete(origin);
  }

  noAnswer(origin: string, now: number): void {
    const health = this.origins.get(origin) ?? { failures: 0, nextProbe: 0 };
    health.failures++;
    health.nextProbe = Math.max(health.nextProbe, now + PROBE_EVERY_US);
    this.origins.set(origin, health);
  }

  /** Nothing of this origin is waiting any more: what was known of it is dropped. */
  forget(origin: string): void {
    this.origins.delete(origin);
  }

  downOrigins(): string[] {
    return [...this.origins].filter(([, health]) => health.failures >= DOWN_AFTER).map(([origin]) => origin);
  }
}
