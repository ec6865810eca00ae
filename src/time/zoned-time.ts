/**
 * Wall-clock times of a named time zone (IANA, e.g. `Europe/Berlin`) read as instants: the
 * original service stored naive local times (Python's `datetime.now()`), and they mean an
 * instant only with the zone its host ran in.
 */

const MS_PER_HOUR = 3_600_000;
const MS_PER_DAY = 24 * MS_PER_HOUR;

/** `YYYY-MM-DD HH:MM:SS` with an optional fraction of up to six digits; `T` between is read too. */
const WALL_TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/;

export class UnknownTimeZone extends Error {
  override readonly name = 'UnknownTimeZone';
}

export interface ZonedTimes {
  readonly zone: string;
  /**
   * `text` (a wall-clock time of the zone) as µs since the Unix epoch; undefined when it is not
   * such a time. A time the zone's clocks showed twice (the hour repeated when summer time ends)
   * is the first of the two; a time they skipped (the hour lost when it begins) is read with the
   * offset before the change, so 02:30 on a night clocks go from 02:00 to 03:00 is 03:30.
   */
  micros(text: string): number | undefined;
}

/** The zone's times; throws UnknownTimeZone for a name the platform's time zone data lacks. */
export function zonedTimes(zone: string): ZonedTimes {
  let parts: Intl.DateTimeFormat;
  try {
    parts = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    throw new UnknownTimeZone(`unknown time zone ${JSON.stringify(zone)} (an IANA name such as Europe/Berlin or UTC)`);
  }
  const canonical = parts.resolvedOptions().timeZone;
  /** How far the zone's clocks are ahead of UTC at `utcMs`, in ms. */
  const offsetAt = (utcMs: number): number => {
    const f: Record<string, number> = {};
    for (const part of parts.formatToParts(utcMs)) if (part.type !== 'literal') f[part.type] = Number(part.value);
    return wallMs(f.year!, f.month!, f.day!, f.hour!, f.minute!, f.second!) - (utcMs - (((utcMs % 1000) + 1000) % 1000));
  };
  // Offsets change a few times a year: an hour with no change within a day either side has one
  // offset throughout, kept here; a log of 500,000 rows otherwise asks Intl a million times.
  const steadyHours = new Map<number, number>();
  const toUtcMs = (wall: number): number => {
    const hour = Math.floor(wall / MS_PER_HOUR);
    const steady = steadyHours.get(hour);
    if (steady !== undefined) return wall - steady;
    const before = offsetAt(wall - MS_PER_DAY);
    const after = offsetAt(wall + MS_PER_DAY);
    if (before === after && offsetAt(wall - before) === before) {
      if (steadyHours.size > 10_000) steadyHours.clear();
      steadyHours.set(hour, before);
      return wall - before;
    }
    const shown = [wall - before, wall - after].filter((utc) => offsetAt(utc) === wall - utc);
    return shown.length > 0 ? Math.min(...shown) : wall - before;
  };
  return {
    zone: canonical,
    micros(text) {
      const m = WALL_TIME.exec(text.trim());
      if (!m) return undefined;
      const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
      if (mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 59) return undefined;
      const wall = wallMs(y, mo, d, h, mi, s);
      if (new Date(wall).getUTCDate() !== d) return undefined;
      const fraction = Number((m[7] ?? '').padEnd(6, '0'));
      return canonical === 'UTC' ? wall * 1000 + fraction : toUtcMs(wall) * 1000 + fraction;
    },
  };
}

/** A wall-clock time as if it were UTC, in ms (years 0 to 99 included, unlike Date.UTC). */
function wallMs(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getTime() + ((hour * 60 + minute) * 60 + second) * 1000;
}
