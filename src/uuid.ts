import { randomUUID } from 'node:crypto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The canonical (lower-case) form of a uuid given by a user, or undefined when it is not one. */
export function canonicalUuid(text: string): string | undefined {
  const lower = text.toLowerCase();
  return UUID.test(lower) ? lower : undefined;
}

/**
 * A version 7 uuid (RFC 9562): the first 48 bits are the time in milliseconds, the rest random.
 * The event log's rows are keyed by these, so each insert lands at the end of the primary-key
 * index instead of on a random page: with random (v4) keys a commit of a few dozen rows
 * dirtied a page per row, and commits were the receive path's largest cost on SQLite.
 */
export function timeOrderedUuid(now = Date.now()): string {
  // randomUUID draws from a cached entropy pool; randomBytes per call was a syscall each.
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V the variant already
  return timePrefix(now) + random.slice(15);
}

let prefixTime = -1;
let prefix = '';

/** `tttttttt-tttt-7`, the time's part and the version: the same for every uuid of one millisecond. */
function timePrefix(now: number): string {
  if (now !== prefixTime) {
    const time = now.toString(16).padStart(12, '0');
    prefix = `${time.slice(0, 8)}-${time.slice(8, 12)}-7`;
    prefixTime = now;
  }
  return prefix;
}
