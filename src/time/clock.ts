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
