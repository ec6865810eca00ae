/**
 * Timestamps are microseconds since the Unix epoch (UTC). The wall clock gives milliseconds;
 * the sub-millisecond part comes from the monotonic clock, and successive readings never
 * repeat or go back, so `updated` always moves forward within a process.
 */
export type Clock = () => number;

export function systemClock(): Clock {
  let last = 0;
  return () => {
    const micros = Date.now() * 1000 + Number((process.hrtime.bigint() / 1000n) % 1000n);
    last = Math.max(micros, last + 1);
    return last;
  };
}

/** `YYYY-MM-DDTHH:MM:SS.ffffff`: UTC, six fractional digits, no zone designator. */
export function formatTimestamp(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const iso = new Date(millis).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const fraction = String(micros - Math.floor(micros / 1_000_000) * 1_000_000).padStart(6, '0');
  return `${iso.slice(0, 19)}.${fraction}`;
}

/**
 * A timestamp as the records write them (`formatTimestamp`), in µs; undefined when malformed or
 * not a real date and time. The fraction may be shorter (`.5` is half a second) or left out,
 * so that a time a person types is read as meant; no zone designator: it is UTC.
 */
export function parseTimestamp(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (h > 23 || mi > 59 || s > 59) return undefined;
  // setUTCFullYear, not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) return undefined;
  const micros = Number((m[7] ?? '').padEnd(6, '0'));
  return (date.getTime() + ((h * 60 + mi) * 60 + s) * 1000) * 1000 + micros;
}

/** `YYYY-MM-DD HH:MM:SS` (UTC), as the CLI takes dates; undefined when malformed. */
export function parseCliDate(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$/.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const millis = Date.UTC(y, mo - 1, d, h, mi, s);
  const check = new Date(millis);
  if (check.getUTCFullYear() !== y || check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d) return undefined;
  return millis * 1000;
}
