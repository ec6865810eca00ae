import { randomBytes } from 'node:crypto';

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
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
