/**
 * Keys of the form "an object here whose members equal these values"
 * (`destinationTable` is 'Transactions.project' and `value` is '1234'): an object in an event
 * finds the keys it satisfies with one lookup per member for each set of member names, not one
 * test per key. Values are looked up as `equals` compares them (Map keys: 1 is 1.0, '1' is not 1).
 */
import { isJsonObject, type JsonValue } from '../json.js';
import type { MemberEquals, Scalar } from '../jsonpath/index.js';

/** One level per member name: the next level by that member's value, the items at the last. */
type Level<T> = Map<Scalar, Level<T> | Set<T>>;

interface NameSet<T> {
  readonly names: readonly string[];
  readonly values: Level<T>;
}

export class MemberValues<T> {
  private readonly byNames = new Map<string, NameSet<T>>();

  add(equal: readonly MemberEquals[], item: T): void {
    const names = equal.map((e) => e.name);
    const signature = JSON.stringify(names);
    let nameSet = this.byNames.get(signature);
    if (!nameSet) this.byNames.set(signature, (nameSet = { names, values: new Map() }));
    let level = nameSet.values;
    for (const { value } of equal.slice(0, -1)) {
      let next = level.get(value) as Level<T> | undefined;
      if (!next) level.set(value, (next = new Map()));
      level = next;
    }
    const last = equal[equal.length - 1]!.value;
    let items = level.get(last) as Set<T> | undefined;
    if (!items) level.set(last, (items = new Set()));
    items.add(item);
  }

  remove(equal: readonly MemberEquals[], item: T): void {
    const signature = JSON.stringify(equal.map((e) => e.name));
    const nameSet = this.byNames.get(signature);
    if (!nameSet) return;
    const levels: Level<T>[] = [nameSet.values];
    for (const { value } of equal.slice(0, -1)) {
      const next = levels[levels.length - 1]!.get(value) as Level<T> | undefined;
      if (!next) return;
      levels.push(next);
    }
    const items = levels[levels.length - 1]!.get(equal[equal.length - 1]!.value) as Set<T> | undefined;
    if (!items?.delete(item) || items.size > 0) return;
    // Drop the levels left empty, from the last up.
    for (let i = levels.length - 1; i >= 0; i--) {
      levels[i]!.delete(equal[i]!.value);
      if (levels[i]!.size > 0) return;
    }
    this.byNames.delete(signature);
  }

  items(equal: readonly MemberEquals[]): Iterable<T> {
    let level: Level<T> | Set<T> | undefined = this.byNames.get(JSON.stringify(equal.map((e) => e.name)))?.values;
    for (const { value } of equal) level = level instanceof Map ? level.get(value) : undefined;
    return level instanceof Set ? level : [];
  }

  /** Calls `found` for every item whose members `value` has. */
  visit(value: JsonValue, found: (item: T) => void): void {
    if (!isJsonObject(value)) return;
    for (const { names, values } of this.byNames.values()) {
      let level: Level<T> | Set<T> | undefined = values;
      for (const name of names) {
        // Only a scalar can be a key; an object or array member finds nothing, as for `equals`.
        level = Object.hasOwn(value, name) ? (level as Level<T>).get(value[name] as Scalar) : undefined;
        if (level === undefined) break;
      }
      if (level) for (const item of level as Set<T>) found(item);
    }
  }
}
