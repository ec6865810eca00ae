/**
 * The index keys of all expressions, arranged as a trie over their paths, so that one walk of
 * an event finds every key it contains: the walk only follows members the trie knows, so its
 * cost is bounded by the event's size, not by the number of subscriptions.
 */

import type { JsonValue } from '../json.js';
import type { PathStep, Scalar } from '../jsonpath/index.js';
import type { IndexKey, KeyTest } from './index-keys.js';
import { MemberValues } from './member-values.js';
import { NumberBounds } from './number-bounds.js';
import { StringSuffixes } from './string-suffixes.js';

type Found<T> = (item: T) => void;

class TrieNode<T> {
  names?: Map<string, TrieNode<T>>;
  indices?: Map<number, TrieNode<T>>;
  anyChild?: TrieNode<T>;
  descendChild?: TrieNode<T>;
  present?: Set<T>;
  strings?: Map<string, Set<T>>;
  numbers?: Map<number, Set<T>>;
  literals?: Map<boolean | null, Set<T>>;
  bounds?: NumberBounds<T>;
  suffixes?: StringSuffixes<T>;
  members?: MemberValues<T>;

  child(s: PathStep): TrieNode<T> {
    switch (s.kind) {
      case 'name':
        return getOrCreate((this.names ??= new Map()), s.name, () => new TrieNode<T>());
      case 'index':
        return getOrCreate((this.indices ??= new Map()), s.index, () => new TrieNode<T>());
      case 'any':
        return (this.anyChild ??= new TrieNode<T>());
      case 'descend':
        return (this.descendChild ??= new TrieNode<T>());
    }
  }

  add(test: KeyTest, item: T): void {
    if (test.kind === 'exists') (this.present ??= new Set()).add(item);
    else if (test.kind === 'equals') this.valueBucket(test.value).add(item);
    else if (test.kind === 'endsWith') (this.suffixes ??= new StringSuffixes()).add(test.suffix, item);
    else if (test.kind === 'members') (this.members ??= new MemberValues()).add(test.equal, item);
    else (this.bounds ??= new NumberBounds()).add(test.ordering, test.bound, item);
  }

  remove(test: KeyTest, item: T): void {
    if (test.kind === 'exists') this.present?.delete(item);
    else if (test.kind === 'equals') this.removeFromValueBucket(test.value, item);
    else if (test.kind === 'endsWith') this.suffixes?.remove(test.suffix, item);
    else if (test.kind === 'members') this.members?.remove(test.equal, item);
    else this.bounds?.remove(test.ordering, test.bound, item);
  }

  items(test: KeyTest): Iterable<T> {
    if (test.kind === 'exists') return this.present ?? [];
    if (test.kind === 'equals') return this.valueBucket(test.value);
    if (test.kind === 'endsWith') return this.suffixes?.items(test.suffix) ?? [];
    if (test.kind === 'members') return this.members?.items(test.equal) ?? [];
    return this.bounds?.items(test.ordering, test.bound) ?? [];
  }

  private removeFromValueBucket(value: Scalar, item: T): void {
    const buckets: Map<Scalar, Set<T>> | undefined =
      typeof value === 'string' ? this.strings : typeof value === 'number' ? this.numbers : this.literals;
    const bucket = buckets?.get(value);
    if (bucket?.delete(item) && bucket.size === 0) buckets!.delete(value);
  }

  private valueBucket(value: Scalar): Set<T> {
    if (typeof value === 'string') return getOrCreate((this.strings ??= new Map()), value, () => new Set<T>());
    if (typeof value === 'number') return getOrCreate((this.numbers ??= new Map()), value, () => new Set<T>());
    return getOrCreate((this.literals ??= new Map()), value, () => new Set<T>());
  }
}

export class KeyTrie<T> {
  private readonly root = new TrieNode<T>();

  add(key: IndexKey, item: T): void {
    this.nodeAt(key.path).add(key.test, item);
  }

  remove(key: IndexKey, item: T): void {
    this.nodeAt(key.path).remove(key.test, item);
  }

  itemsAt(key: IndexKey): T[] {
    return [...this.nodeAt(key.path).items(key.test)];
  }

  /** Calls `found` for every item filed under a key that `document` contains (maybe twice). */
  visit(document: JsonValue, found: Found<T>): void {
    visitNode(this.root, document, found);
  }

  private nodeAt(path: readonly PathStep[]): TrieNode<T> {
    let node = this.root;
    for (const s of path) node = node.child(s);
    return node;
  }
}

function visitNode<T>(node: TrieNode<T>, value: JsonValue, found: Found<T>): void {
  if (node.descendChild) visitSelfAndDescendants(node.descendChild, value, found);
  if (node.present) for (const item of node.present) found(item);
  if (value === null || typeof value !== 'object') {
    visitScalar(node, value, found);
    return;
  }
  if (Array.isArray(value)) {
    if (node.indices) {
      for (const [index, child] of node.indices) {
        const i = index < 0 ? value.length + index : index;
        if (i >= 0 && i < value.length) visitNode(child, value[i]!, found);
      }
    }
    if (node.anyChild) for (const element of value) visitNode(node.anyChild, element, found);
    return;
  }
  node.members?.visit(value, found);
  if (node.names) visitMembers(node.names, value, found);
  if (node.anyChild) for (const key of Object.keys(value)) visitNode(node.anyChild, value[key]!, found);
}

function visitScalar<T>(node: TrieNode<T>, value: Scalar, found: Found<T>): void {
  let bucket: Set<T> | undefined;
  if (typeof value === 'string') {
    bucket = node.strings?.get(value);
    node.suffixes?.visit(value, found);
  } else if (typeof value === 'number') {
    bucket = node.numbers?.get(value);
    node.bounds?.visit(value, found);
  } else bucket = node.literals?.get(value);
  if (bucket) for (const item of bucket) found(item);
}

function visitSelfAndDescendants<T>(node: TrieNode<T>, value: JsonValue, found: Found<T>): void {
  visitNode(node, value, found);
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) for (const element of value) visitSelfAndDescendants(node, element, found);
  else for (const key of Object.keys(value)) visitSelfAndDescendants(node, value[key]!, found);
}

function visitMembers<T>(names: Map<string, TrieNode<T>>, object: { [key: string]: JsonValue }, found: Found<T>): void {
  // Walk whichever side is smaller: the event's members or the names the trie knows.
  const keys = Object.keys(object);
  if (keys.length <= names.size) {
    for (const key of keys) {
      const child = names.get(key);
      if (child) visitNode(child, object[key]!, found);
    }
  } else {
    for (const [name, child] of names) {
      if (Object.hasOwn(object, name)) visitNode(child, object[name]!, found);
    }
  }
}

function getOrCreate<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}
