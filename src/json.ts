/**
 * JSON documents as the whole service sees them (events, tried documents, policy bodies), and
 * how deeply one may nest.
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export type JsonObject = { [key: string]: JsonValue };

/** A JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * How deeply nested a document the service evaluates expressions on may be. Events and
 * tried documents deeper than this are refused when they arrive, so that evaluation (which
 * recurses for `..`) never runs out of stack or into json-p3's recursion limit.
 */
export const MAX_DOCUMENT_DEPTH = 100;

/** Whether `value` has objects or arrays nested more than `limit` deep (`{}` is 1, `{"a": []}` 2). */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit === 0) return true;
  for (const child of Array.isArray(value) ? value : Object.values(value)) if (nestedDeeperThan(child, limit - 1)) return true;
  return false;
}
