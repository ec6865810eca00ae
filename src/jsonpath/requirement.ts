/**
 * What an expression needs of a document before it can select anything: a necessary (never a
 * sufficient) condition, written in a form the subscription index can look up in a hash table.
 *
 * Soundness is the only rule: if an expression selects at least one node of a document, its
 * requirement holds for that document. A requirement may be weaker than the expression
 * (`always` is weakest and always correct); it must never be stronger.
 */
import type { JsonValue } from '../json.js';

/**
 * One step of a path from the root:
 * - `name`: the member of that name of an object (never an array element);
 * - `index`: the element at that index of an array (negative counts from the end);
 * - `any`: any member value of an object or any element of an array;
 * - `descend`: the node itself or any node below it, at any depth (what `..` reaches).
 */
export type PathStep =
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number }
  | { readonly kind: 'any' }
  | { readonly kind: 'descend' };

export type Scalar = string | number | boolean | null;

export type Ordering = '<' | '<=' | '>' | '>=';

export type Requirement =
  | { readonly kind: 'always' }
  /** Some node exists at `path`. */
  | { readonly kind: 'exists'; readonly path: readonly PathStep[] }
  /**
   * Some node at `path` equals `value`: strings and booleans exactly, numbers by numeric value
   * (1 equals 1.0), null only null; never across types.
   */
  | { readonly kind: 'equals'; readonly path: readonly PathStep[]; readonly value: Scalar }
  /** Some node at `path` is a number that stands in `ordering` to `bound` (`node > 100`). */
  | { readonly kind: 'compares'; readonly path: readonly PathStep[]; readonly ordering: Ordering; readonly bound: number }
  /** Some node at `path` is a string ending with `suffix` (`match(@.name, '.*\\.txt')`). */
  | { readonly kind: 'endsWith'; readonly path: readonly PathStep[]; readonly suffix: string }
  | { readonly kind: 'all'; readonly of: readonly Requirement[] }
  | { readonly kind: 'any'; readonly of: readonly Requirement[] };

export const ALWAYS: Requirement = Object.freeze({ kind: 'always' });

export const step = {
  name: (name: string): PathStep => ({ kind: 'name', name }),
  index: (index: number): PathStep => ({ kind: 'index', index }),
  any: (): PathStep => ({ kind: 'any' }),
  descend: (): PathStep => ({ kind: 'descend' }),
};

export function exists(path: readonly PathStep[]): Requirement {
  return path.length === 0 ? ALWAYS : { kind: 'exists', path };
}

/** `equals` for scalars; other constants can only promise that the node exists. */
export function equals(path: readonly PathStep[], value: JsonValue): Requirement {
  return isScalar(value) ? { kind: 'equals', path, value } : exists(path);
}

/** `compares` for a number bound; any other bound (a string) promises only that the node exists. */
export function compares(path: readonly PathStep[], ordering: Ordering, bound: JsonValue): Requirement {
  return typeof bound === 'number' && path.length > 0 ? { kind: 'compares', path, ordering, bound } : exists(path);
}

/** `endsWith` for a non-empty suffix; any string ends with the empty one. */
export function endsWith(path: readonly PathStep[], suffix: string): Requirement {
  return suffix === '' ? exists(path) : { kind: 'endsWith', path, suffix };
}

/** `bound < node` is `node > bound`: the ordering seen from the other side. */
export function flipped(ordering: Ordering): Ordering {
  return ({ '<': '>', '<=': '>=', '>': '<', '>=': '<=' } as const)[ordering];
}

function inOrder(value: number, ordering: Ordering, bound: number): boolean {
  switch (ordering) {
    case '<':
      return value < bound;
    case '<=':
      return value <= bound;
    case '>':
      return value > bound;
    case '>=':
      return value >= bound;
  }
}

/** All of them, without the `exists(P)` parts that another part already implies. */
export function allOf(requirements: readonly Requirement[]): Requirement {
  const flat: Requirement[] = [];
  for (const r of requirements) {
    if (r.kind === 'always') continue;
    if (r.kind === 'all') flat.push(...r.of);
    else flat.push(r);
  }
  const parts = flat.filter(
    (part, i) => part.kind !== 'exists' || !flat.some((other, j) => j !== i && impliesNodeAt(other, part.path, j < i)),
  );
  if (parts.length === 0) return ALWAYS;
  return parts.length === 1 ? parts[0]! : { kind: 'all', of: parts };
}

/**
 * Whether `other` promises a node at `path`: it needs a node at `path` or below it. Of two
 * identical `exists`, only the earlier one counts, so that one of them stays.
 */
function impliesNodeAt(other: Requirement, path: readonly PathStep[], otherIsEarlier: boolean): boolean {
  switch (other.kind) {
    case 'always':
      return false;
    case 'any':
      return other.of.every((branch) => impliesNodeAt(branch, path, true));
    case 'all':
      return other.of.some((part) => impliesNodeAt(part, path, true));
    default:
      if (other.path.length < path.length || !path.every((s, k) => sameStep(s, other.path[k]!))) return false;
      return other.path.length > path.length || other.kind !== 'exists' || otherIsEarlier;
  }
}

function sameStep(a: PathStep, b: PathStep): boolean {
  if (a.kind === 'name') return b.kind === 'name' && a.name === b.name;
  if (a.kind === 'index') return b.kind === 'index' && a.index === b.index;
  return a.kind === b.kind;
}

export function anyOf(requirements: readonly Requirement[]): Requirement {
  const parts: Requirement[] = [];
  for (const r of requirements) {
    if (r.kind === 'always') return ALWAYS;
    if (r.kind === 'any') parts.push(...r.of);
    else parts.push(r);
  }
  if (parts.length === 0) return ALWAYS;
  return parts.length === 1 ? parts[0]! : { kind: 'any', of: parts };
}

export function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** The requirement checked directly against a document: the reference the index must agree with. */
export function holds(requirement: Requirement, document: JsonValue): boolean {
  switch (requirement.kind) {
    case 'always':
      return true;
    case 'exists':
      return nodesAt(document, requirement.path).length > 0;
    case 'equals':
      return nodesAt(document, requirement.path).some((v) => v === requirement.value);
    case 'compares': {
      const { ordering, bound } = requirement;
      return nodesAt(document, requirement.path).some((v) => typeof v === 'number' && inOrder(v, ordering, bound));
    }
    case 'endsWith':
      return nodesAt(document, requirement.path).some((v) => typeof v === 'string' && v.endsWith(requirement.suffix));
    case 'all':
      return requirement.of.every((r) => holds(r, document));
    case 'any':
      return requirement.of.some((r) => holds(r, document));
  }
}

function childrenAt(value: JsonValue, s: PathStep): JsonValue[] {
  if (s.kind === 'descend') return selfAndDescendants(value);
  if (value === null || typeof value !== 'object') return [];
  if (s.kind === 'any') return Array.isArray(value) ? value : Object.values(value);
  if (Array.isArray(value)) {
    if (s.kind !== 'index') return [];
    const i = s.index < 0 ? value.length + s.index : s.index;
    return i >= 0 && i < value.length ? [value[i]!] : [];
  }
  if (s.kind !== 'name' || !Object.hasOwn(value, s.name)) return [];
  return [value[s.name]!];
}

function selfAndDescendants(value: JsonValue): JsonValue[] {
  const children = value !== null && typeof value === 'object' ? Object.values(value) : [];
  return [value, ...children.flatMap(selfAndDescendants)];
}

function nodesAt(document: JsonValue, path: readonly PathStep[]): JsonValue[] {
  let nodes: JsonValue[] = [document];
  for (const s of path) nodes = nodes.flatMap((n) => childrenAt(n, s));
  return nodes;
}
