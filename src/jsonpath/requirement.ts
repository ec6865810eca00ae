/**
 * What an expression needs of a document before it can select anything: a necessary (never a
 * sufficient) condition, written in a form the subscription index can look up in a hash table.
 *
 * Soundness is the only rule: if an expression selects at least one node of a document, its
 * requirement holds for that document. A requirement may be weaker than the expression
 * (`always` is weakest and always correct); it must never be stronger.
 */
import { isJsonObject, type JsonValue } from '../json.js';

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

export interface MemberEquals {
  readonly name: string;
  readonly value: Scalar;
}

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
  /**
   * Some node at `path` is a string ending with `suffix`, with no line feed or carriage return in
   * it: what `match(@.name, '.*\\.txt')` asks (I-Regexp's `.` matches neither).
   */
  | { readonly kind: 'endsWith'; readonly path: readonly PathStep[]; readonly suffix: string }
  /**
   * Some node at `path` is an object whose members equal all of these, each as `equals` has it
   * (`@.destinationTable == 'Transactions.project' && @.value == '1234'`): two conditions on the
   * same node, where two `equals` would let them be met by different nodes.
   */
  | { readonly kind: 'members'; readonly path: readonly PathStep[]; readonly equal: readonly MemberEquals[] }
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

/**
 * `endsWith` for a non-empty suffix without line breaks; any string ends with the empty one, and
 * a suffix with a line break is left to the expression.
 */
export function endsWith(path: readonly PathStep[], suffix: string): Requirement {
  return suffix === '' || hasLineBreak(suffix) ? exists(path) : { kind: 'endsWith', path, suffix };
}

/** A line feed or a carriage return: what `endsWith` allows nowhere in the string. */
export function hasLineBreak(text: string): boolean {
  return text.includes('\n') || text.includes('\r');
}

/**
 * `members` for two or more distinct conditions, in a fixed order (the same conditions written
 * in another order make the same requirement), `equals` for one.
 */
export function members(path: readonly PathStep[], equal: readonly MemberEquals[]): Requirement {
  const byText = new Map(equal.map((e) => [JSON.stringify([e.name, e.value]), e]));
  const sorted = [...byText.keys()].sort().map((text) => byText.get(text)!);
  if (sorted.length === 1) return equals([...path, step.name(sorted[0]!.name)], sorted[0]!.value);
  return { kind: 'members', path: [...path], equal: sorted };
}

/**
 * The requirement of a filter's terms joined by `and`: those that are a member of the node
 * under test (at `current`) equal to a scalar make one `members` (`@.a == 1 && @.b == 2` needs
 * one node with both, not two that have one each); the others their own requirement.
 */
export function conjunction<Term>(
  terms: readonly Term[],
  current: readonly PathStep[],
  memberEqualsOf: (term: Term) => MemberEquals | undefined,
  requirementOf: (term: Term) => Requirement,
): Requirement {
  const equal: MemberEquals[] = [];
  const others: Requirement[] = [];
  for (const term of terms) {
    const memberEqual = memberEqualsOf(term);
    if (memberEqual) equal.push(memberEqual);
    else others.push(requirementOf(term));
  }
  return allOf(equal.length > 0 ? [members(current, equal), ...others] : others);
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

/**
 * The requirement checked directly against a document: what the index's keys mean, and how it
 * checks the other keys of an exact expression found through one of them.
 */
export function holds(requirement: Requirement, document: JsonValue): boolean {
  switch (requirement.kind) {
    case 'always':
      return true;
    case 'all':
      return requirement.of.every((r) => holds(r, document));
    case 'any':
      return requirement.of.some((r) => holds(r, document));
    default:
      return someNodeAt(document, requirement, 0);
  }
}

type OneNodeRequirement = Extract<Requirement, { readonly path: readonly PathStep[] }>;

/** Whether `node` is what a requirement on one node asks of it. */
function meets(requirement: OneNodeRequirement, node: JsonValue): boolean {
  switch (requirement.kind) {
    case 'exists':
      return true;
    case 'equals':
      return node === requirement.value;
    case 'compares':
      return typeof node === 'number' && inOrder(node, requirement.ordering, requirement.bound);
    case 'endsWith':
      return typeof node === 'string' && node.endsWith(requirement.suffix) && !hasLineBreak(node);
    case 'members':
      return isJsonObject(node) && hasMembers(node, requirement.equal);
  }
}

function hasMembers(node: { [key: string]: JsonValue }, equal: readonly MemberEquals[]): boolean {
  for (const { name, value } of equal) if (!Object.hasOwn(node, name) || node[name] !== value) return false;
  return true;
}

/**
 * Whether some node at the requirement's path (from step `at` on) meets it; stops at the first
 * that does. (No closure per call: the subscription index checks keys this way for every event.)
 */
function someNodeAt(value: JsonValue, requirement: OneNodeRequirement, at: number): boolean {
  const s = requirement.path[at];
  if (s === undefined) return meets(requirement, value);
  if (s.kind === 'descend') return someSelfOrDescendant(value, requirement, at + 1);
  if (value === null || typeof value !== 'object') return false;
  if (s.kind === 'any') {
    for (const child of Array.isArray(value) ? value : Object.values(value)) if (someNodeAt(child, requirement, at + 1)) return true;
    return false;
  }
  if (Array.isArray(value)) {
    if (s.kind !== 'index') return false;
    const i = s.index < 0 ? value.length + s.index : s.index;
    return i >= 0 && i < value.length && someNodeAt(value[i]!, requirement, at + 1);
  }
  return s.kind === 'name' && Object.hasOwn(value, s.name) && someNodeAt(value[s.name]!, requirement, at + 1);
}

/** Whether the node at `value` or one below it has, from step `at` on, a node that meets the requirement. */
function someSelfOrDescendant(value: JsonValue, requirement: OneNodeRequirement, at: number): boolean {
  if (someNodeAt(value, requirement, at)) return true;
  if (value === null || typeof value !== 'object') return false;
  for (const child of Array.isArray(value) ? value : Object.values(value)) if (someSelfOrDescendant(child, requirement, at)) return true;
  return false;
}
