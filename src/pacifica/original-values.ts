/** Values as the original stored them, read as this service keeps them. */
import { canonicalUuid } from '../uuid.js';
import type { SourceValue } from './sql-driver.js';

/**
 * A uuid in canonical form: peewee stores them as 32 hex digits outside PostgreSQL (whose
 * `uuid` type gives them dashed). Undefined for anything else.
 */
export function uuidOf(value: SourceValue): string | undefined {
  if (typeof value !== 'string') return undefined;
  const hex = /^[0-9a-f]{32}$/i.test(value)
    ? `${value.slice(0, 8)}-${value.slice(8, 12)}-${value.slice(12, 16)}-${value.slice(16, 20)}-${value.slice(20)}`
    : value;
  return canonicalUuid(hex);
}

/** A policy or target code as the original wrote it (`'200'`; `''` when there was none): the status, or null. */
export function statusOf(code: string | null): number | null {
  if (code === null) return null;
  const trimmed = code.trim();
  return /^[1-5]\d\d$/.test(trimmed) ? Number(trimmed) : null;
}
