/**
 * Work waiting its turn, in lanes by key (a target origin for deliveries, a user for policy
 * calls), each lane with its own share of slots: what runs in one lane never waits for what
 * runs in another, so a target or a user whose answers are slow holds back only its own work.
 * A lane holds at most twice its slots (as much again waiting as may run): past that, work
 * goes back to the queue, and claims leave that kind of work out until the lane drains.
 */
interface Lane<T> {
  waiting: T[];
  running: number;
}

export class Lanes<T> {
  private readonly lanes = new Map<string, Lane<T>>();
  private count = 0;

  /** `slots`: how many of a lane's items may run at once now (it may change over time). */
  constructor(private readonly slots: (key: string) => number) {}

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

  /** Holds twice its slots: more of this lane's work is better left in the queue for now. */
  isFull(key: string): boolean {
    return this.room(key) <= 0;
  }

  /** How many more items the lane takes before it is full. */
  room(key: string): number {
    const lane = this.lanes.get(key);
    return 2 * this.slots(key) - (lane === undefined ? 0 : lane.waiting.length + lane.running);
  }

  /** The keys whose lanes are full. */
  fullKeys(): string[] {
    return [...this.lanes.keys()].filter((key) => this.isFull(key));
  }

  /**
   * Takes the items that may start now, oldest first in each lane, and counts them running: as
   * many as a lane has free slots, or fewer when `allowance` says so (a target that stopped
   * answering is only probed). `only`: that lane alone (the one whose slot just came free).
   * `ready`: asked of each item that would start, in turn; one it refuses (its subscription is
   * over its rate) keeps its place, and the items behind it may start instead.
   */
  start(
    allowance: (key: string, free: number) => number = (_key, free) => free,
    only?: string,
    ready: (item: T) => boolean = () => true,
  ): Array<{ key: string; item: T }> {
    const started: Array<{ key: string; item: T }> = [];
    const one = only === undefined ? undefined : this.lanes.get(only);
    const lanes: Iterable<[string, Lane<T>]> = only === undefined ? this.lanes : one === undefined ? [] : [[only, one]];
    for (const [key, lane] of lanes) {
      if (lane.waiting.length === 0) continue;
      const free = this.slots(key) - lane.running;
      const room = Math.min(lane.waiting.length, free > 0 ? allowance(key, free) : 0);
      if (room === 0) continue;
      // Called for every slot that comes free: it looks only as far as it takes items, not
      // at the whole lane (which holds twice its slots).
      const skipped: T[] = [];
      let taken = 0;
      let looked = 0;
      while (taken < room && looked < lane.waiting.length) {
        const item = lane.waiting[looked++]!;
        if (ready(item)) {
          started.push({ key, item });
          taken++;
        } else skipped.push(item);
      }
      lane.waiting.splice(0, looked, ...skipped);
      lane.running += taken;
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

  private dropIfEmpty(key: string, lane: Lane<T>): void {
    if (lane.running === 0 && lane.waiting.length === 0) this.lanes.delete(key);
  }
}
