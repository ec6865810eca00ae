/**
 * A map that holds at most `limit` entries: setting an entry makes it the newest, and the oldest
 * set is forgotten when there are too many. Reads do not reorder; set again to keep an entry.
 */
export class RecentlyUsed<K, V> extends Map<K, V> {
  constructor(private readonly limit: number) {
    super();
  }

  override set(key: K, value: V): this {
    super.delete(key);
    super.set(key, value);
    if (this.size > this.limit) super.delete(this.keys().next().value!);
    return this;
  }
}
