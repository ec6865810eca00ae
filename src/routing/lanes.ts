/**
 * Work waiting its turn, in lanes by key (a target origin for deliveries, a user for policy
 * calls), each lane with its own share of slots: what runs in one lane never waits for what
 * runs in another, so a target or a user whose answers are slow holds back only its own work.
 * A lane is full when it holds twice its slots (as much again waiting as may run): a runner
 * then claims no more of that lane's kind of work until it drains. Work handed over in memory
 * may fill it further, up to its depth; past that it goes back to the queue.
 */
interface Lane<T> {
  waiting: T[];
  running: number;
}

export class Lanes<T> {
  private readonly lanes = new Map<string, Lane<T>>();
  private count = 0;

  /** `depth`: the most a lane holds, waiting and running (at least twice its slots). */
  constructor(
    private readonly slots: number,
    private readonly depth: number,
  ) {}

  /** Items waiting or running, in every lane. */
  get size(): number {
    return this.count;
  }

  add(key: string, item: T): void {
    let lane = this.lanes.get(key);
    if (!lane) this.lanes.set(key, (lane = { waiting: [], running: 0 }));
    lane.waiting.push(item);
    this.count++;
  }

  /** More of this lane's work is better left in the queue for now. */
  isFull(key: string): boolean {
    return this.holds(key) >= 2 * this.slots;
  }

  /** Whether one more item may wait in this lane. */
  hasRoom(key: string): boolean {
    return this.holds(key) < Math.max(this.depth, 2 * this.slots);
  }

  private holds(key: string): number {
    const lane = this.lanes.get(key);
    return lane === undefined ? 0 : lane.waiting.length + lane.running;
  }

  /** The keys whose lanes are full: claims should leave their work out for now. */
  fullKeys(): string[] {
    return [...this.lanes.keys()].filter((key) => this.isFull(key));
  }

  /**
   * Takes the items that may start now, oldest first in each lane, and counts them running:
   * as many as a lane has free slots, or fewer when `allowance` says so (a target that stopped
   * answering is only probed).
   */
  start(allowance: (key: string, free: number) => number = (_key, free) => free): Array<{ key: string; item: T }> {
    const started: Array<{ key: string; item: T }> = [];
    for (const [key, lane] of this.lanes) {
      if (lane.waiting.length === 0) continue;
      const free = this.slots - lane.running;
      const take = Math.min(lane.waiting.length, free > 0 ? allowance(key, free) : 0);
      for (const item of lane.waiting.splice(0, take)) started.push({ key, item });
      lane.running += take;
    }
    return started;
  }

  /** An item that started has finished: its slot is free. */
  finished(key: string): void {
    const lane = this.lanes.get(key);
    if (!lane) return;
    lane.running--;
    this.count--;
    this.dropIfEmpty(key, lane);
  }

  /** Takes out the waiting items `which` picks, and returns them. */
  removeWaiting(which: (item: T, key: string) => boolean): T[] {
    const removed: T[] = [];
    for (const [key, lane] of this.lanes) {
      const kept: T[] = [];
      for (const item of lane.waiting) (which(item, key) ? removed : kept).push(item);
      lane.waiting = kept;
      this.dropIfEmpty(key, lane);
    }
    this.count -= removed.length;
    return removed;
  }

  has(key: string): boolean {
    return this.lanes.has(key);
  }

  running(key: string): number {
    return this.lanes.get(key)?.running ?? 0;
  }

  waiting(key: string): number {
    return this.lanes.get(key)?.waiting.length ?? 0;
  }

  private dropIfEmpty(key: string, lane: Lane<T>): void {
    if (lane.running === 0 && lane.waiting.length === 0) this.lanes.delete(key);
  }
}
