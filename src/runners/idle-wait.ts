/**
 * How long a runner waits between rounds that took nothing. While it holds work (in flight,
 * waiting in its lanes, outcomes not written, origins down), every `pollMs`, as always. While
 * it holds nothing, each wait is twice the one before, up to `maxMs`: an idle instance then
 * claims from an empty queue twice a minute instead of every second (on PostgreSQL each claim
 * is a commit). Nothing found later for it: work that arrives wakes the runner (new events and
 * requeues in-process, released rows and other processes' commits: see docs/operations.md),
 * which starts the waits over from `pollMs`; and the retries this runner scheduled end the
 * wait when they come due (`scheduled`), so a retry is tried at its time, not at the next poll.
 * What is left to the poll alone is what another instance leaves behind when it dies: rows
 * whose leases run out, and its retries.
 */

/** Due times are kept to this precision (µs): a retry waits at most this much longer than its delay. */
const DUE_SLOT_US = 50_000;

export class IdleWait {
  private waitMs: number;
  /** The due times (slots, µs) of retries this runner scheduled that have not come yet. */
  private readonly dues = new Set<number>();

  constructor(
    private readonly pollMs: number,
    private readonly maxMs: number,
  ) {
    this.waitMs = pollMs;
  }

  /** A retry of this runner's stage is due at `dueUs` (µs, the clock's). */
  scheduled(dueUs: number): void {
    this.dues.add(Math.ceil(dueUs / DUE_SLOT_US) * DUE_SLOT_US);
  }

  /** A claim made at `atUs` took every row due by then (or as many as it asked for, and the runner goes on). */
  claimed(atUs: number): void {
    for (const due of this.dues) if (due <= atUs) this.dues.delete(due);
  }

  /** Work came (a wake, rows taken in): the waits start over. */
  reset(): void {
    this.waitMs = this.pollMs;
  }

  /** The wait after a round that took nothing, at `nowUs`; `holding`: the runner holds work. */
  next(nowUs: number, holding: boolean): number {
    if (holding) {
      this.reset();
      return this.pollMs;
    }
    const wait = this.waitMs;
    this.waitMs = Math.min(this.waitMs * 2, this.maxMs);
    let soonestUs = Infinity;
    for (const due of this.dues) soonestUs = Math.min(soonestUs, due);
    // A due time passed without a claim since (the claims' pacing held one back): soon, not at once.
    return Math.min(wait, Math.max(this.pollMs / 10, (soonestUs - nowUs) / 1000));
  }
}
