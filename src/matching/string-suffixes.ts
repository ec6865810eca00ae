import { hasLineBreak } from '../jsonpath/requirement.js';

/**
 * Keys of the form "a string at this path ending with `.txt`": a string in an event finds the
 * keys it satisfies with one lookup per distinct suffix length, not one test per key.
 */
export class StringSuffixes<T> {
  private readonly bySuffix = new Map<string, Set<T>>();
  /** How many suffixes there are of each length, the lengths ascending. */
  private lengths: Array<{ length: number; suffixes: number }> = [];

  add(suffix: string, item: T): void {
    let items = this.bySuffix.get(suffix);
    if (!items) {
      this.bySuffix.set(suffix, (items = new Set()));
      const counted = this.lengths.find((l) => l.length === suffix.length);
      if (counted) counted.suffixes++;
      else this.lengths = [...this.lengths, { length: suffix.length, suffixes: 1 }].sort((a, b) => a.length - b.length);
    }
    items.add(item);
  }

  remove(suffix: string, item: T): void {
    const items = this.bySuffix.get(suffix);
    if (!items?.delete(item) || items.size > 0) return;
    this.bySuffix.delete(suffix);
    const counted = this.lengths.find((l) => l.length === suffix.length)!;
    if (--counted.suffixes === 0) this.lengths = this.lengths.filter((l) => l !== counted);
  }

  items(suffix: string): Iterable<T> {
    return this.bySuffix.get(suffix) ?? [];
  }

  /** Calls `found` for every item whose suffix `value` ends with, unless `value` has a line break (see `endsWith`). */
  visit(value: string, found: (item: T) => void): void {
    if (hasLineBreak(value)) return;
    for (const { length } of this.lengths) {
      if (length > value.length) break;
      const items = this.bySuffix.get(value.slice(value.length - length));
      if (items) for (const item of items) found(item);
    }
  }
}
