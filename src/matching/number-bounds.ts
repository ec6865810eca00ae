/**
 * Keys of the form "a number at this path `> 100`" (or <, <=, >=), kept sorted by bound so that
 * a number in an event finds the keys it satisfies without looking at the others: the lower
 * bounds in ascending order stop at the first bound above the number, the upper bounds in
 * descending order at the first bound below it.
 */
import type { Ordering } from '../jsonpath/index.js';

interface Threshold<T> {
  readonly ordering: Ordering;
  readonly bound: number;
  readonly items: Set<T>;
}

export class NumberBounds<T> {
  private readonly byKey = new Map<string, Threshold<T>>();
  /** `>` and `>=`, ascending by bound once sorted. */
  private lower: Threshold<T>[] = [];
  /** `<` and `<=`, descending by bound once sorted. */
  private upper: Threshold<T>[] = [];
  private sorted = true;

  add(ordering: Ordering, bound: number, item: T): void {
    const key = ordering + String(bound);
    let threshold = this.byKey.get(key);
    if (!threshold) {
      threshold = { ordering, bound, items: new Set() };
      this.byKey.set(key, threshold);
      (isLowerBound(ordering) ? this.lower : this.upper).push(threshold);
      this.sorted = false;
    }
    threshold.items.add(item);
  }

  remove(ordering: Ordering, bound: number, item: T): void {
    const key = ordering + String(bound);
    const threshold = this.byKey.get(key);
    if (!threshold) return;
    threshold.items.delete(item);
    if (threshold.items.size > 0) return;
    this.byKey.delete(key);
    if (isLowerBound(ordering)) this.lower = this.lower.filter((t) => t !== threshold);
    else this.upper = this.upper.filter((t) => t !== threshold);
  }

  items(ordering: Ordering, bound: number): Iterable<T> {
    return this.byKey.get(ordering + String(bound))?.items ?? [];
  }

  /** Calls `found` for every item whose threshold `value` satisfies. */
  visit(value: number, found: (item: T) => void): void {
    if (!this.sorted) {
      this.lower.sort((a, b) => a.bound - b.bound);
      this.upper.sort((a, b) => b.bound - a.bound);
      this.sorted = true;
    }
    for (const t of this.lower) {
      if (t.bound > value) break;
      if (t.bound < value || t.ordering === '>=') for (const item of t.items) found(item);
    }
    for (const t of this.upper) {
      if (t.bound < value) break;
      if (t.bound > value || t.ordering === '<=') for (const item of t.items) found(item);
    }
  }
}

function isLowerBound(ordering: Ordering): boolean {
  return ordering === '>' || ordering === '>=';
}
