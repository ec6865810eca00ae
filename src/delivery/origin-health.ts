/**
 * How much each target origin is given at once, and which have stopped answering.
 *
 * The window: how many deliveries to an origin may be handed to the sender at once. It starts
 * at the origin's connections and grows by one with each quick answer, up to eight times them:
 * the requests beyond the connections wait in the sender's thread and take the next free
 * connection at once, without a round trip through the busy main thread (with one request per
 * connection, deliveries to one fast target fell from 3,373/s to 1,600/s). A slow answer (a
 * second or more) or none at all puts it back at the connections: queueing for a slow target
 * gains nothing, and a dead one would only have more requests to fail.
 *
 * Down: after three tries in a row that got no answer at all (connection refused or reset,
 * time-out, no such name), an origin is tried at most once a second (a probe, one delivery in
 * flight), its other deliveries waiting, keeping their place and their retry schedule, until a
 * probe gets an answer. Without this, 20,000 queued deliveries to a refused port made ~80,000
 * connection attempts in 85 s. Any HTTP answer, even a 500, means the origin is up: what the
 * status means is the delivery's business.
 */
/** Tries in a row without an answer that make an origin down. */
export const DOWN_AFTER = 3;
/** How often a down origin is tried (µs). */
export const PROBE_EVERY_US = 1_000_000;
/** The window grows to this many times the connections. */
export const MAX_WINDOW_FACTOR = 8;
/** An answer slower than this does not grow the window, and shrinks it back (ms). */
export const QUICK_ANSWER_MS = 1_000;
/**
 * Keeping up: the origin's last answer took at most KEEPING_UP_ANSWER_MS and came within
 * KEEPING_UP_US. Such an origin empties its lane fast: its next rows may wait for room in
 * memory (delivery/runner.ts). One slower than that is treated as a slow origin.
 */
export const KEEPING_UP_ANSWER_MS = 100;
export const KEEPING_UP_US = 250_000;

interface Health {
  window: number;
  failures: number;
  nextProbe: number;
  /** When its last answer came, if it took at most KEEPING_UP_ANSWER_MS; 0 otherwise. */
  keepingUpSince: number;
}

export class OriginHealth {
  private readonly origins = new Map<string, Health>();

  constructor(private readonly connections: number) {}

  /** Deliveries that may be handed to the sender at once now (a down origin: one, to probe with). */
  window(origin: string): number {
    const health = this.origins.get(origin);
    if (!health) return this.connections;
    return health.failures >= DOWN_AFTER ? 1 : health.window;
  }

  isDown(origin: string): boolean {
    return (this.origins.get(origin)?.failures ?? 0) >= DOWN_AFTER;
  }

  /** How many may start now of `free` slots: all of them while it is up; for a down origin, a probe once a second. */
  allowance(origin: string, free: number, now: number): number {
    const health = this.origins.get(origin);
    if (!health || health.failures < DOWN_AFTER) return free;
    if (now < health.nextProbe) return 0;
    health.nextProbe = now + PROBE_EVERY_US;
    return Math.min(free, 1);
  }

  /** Down origins whose probe is due and that have nothing to probe with: `hasWork` says. */
  probesDue(now: number, hasWork: (origin: string) => boolean): string[] {
    const due: string[] = [];
    for (const [origin, health] of this.origins) {
      if (health.failures >= DOWN_AFTER && now >= health.nextProbe && !hasWork(origin)) due.push(origin);
    }
    return due;
  }

  /** It answered `at`, after `durationMs`. */
  answered(origin: string, durationMs: number, at: number): void {
    const health = this.entry(origin);
    health.failures = 0;
    health.window = durationMs < QUICK_ANSWER_MS ? Math.min(this.connections * MAX_WINDOW_FACTOR, health.window + 1) : this.connections;
    health.keepingUpSince = durationMs <= KEEPING_UP_ANSWER_MS ? at : 0;
  }

  /** Its last answer was fast and recent (KEEPING_UP_ANSWER_MS, KEEPING_UP_US), and no try has failed since. */
  keepingUp(origin: string, now: number): boolean {
    const health = this.origins.get(origin);
    return health !== undefined && health.failures === 0 && health.keepingUpSince > 0 && now - health.keepingUpSince <= KEEPING_UP_US;
  }

  noAnswer(origin: string, now: number): void {
    const health = this.entry(origin);
    health.failures++;
    health.window = this.connections;
    health.nextProbe = Math.max(health.nextProbe, now + PROBE_EVERY_US);
  }

  /** What was known of an origin is dropped: it starts afresh when next seen. */
  forget(origin: string): void {
    this.origins.delete(origin);
  }

  /** Origins known, for pruning those nothing waits for. */
  known(): string[] {
    return [...this.origins.keys()];
  }

  downOrigins(): string[] {
    return [...this.origins].filter(([, health]) => health.failures >= DOWN_AFTER).map(([origin]) => origin);
  }

  private entry(origin: string): Health {
    let health = this.origins.get(origin);
    if (!health) this.origins.set(origin, (health = { window: this.connections, failures: 0, nextProbe: 0, keepingUpSince: 0 }));
    return health;
  }
}
