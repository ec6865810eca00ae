/**
 * A target may ask for any Retry-After; one day is the longest the router waits
 * between two tries, so a bogus header cannot park a delivery for years.
 */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/** NOTIFICATIONS_RETRY_DELAYS with its jitter: how the policy and delivery runners space their retries. */
export interface RetrySchedule {
  /** One delay per retry; after the last one the delivery fails. */
  readonly delaysMs: readonly number[];
  /** Jitter (see nextDelayMs). */
  readonly random: () => number;
}

/** ±20 %: spreads the retries of many deliveries that failed together (a target restart). */
const JITTER = 0.2;

/**
 * The delay before the next try, after `attemptsSoFar` failed tries, or
 * undefined when the schedule is exhausted and the delivery should give up.
 *
 * The delay is `scheduleMs[attemptsSoFar - 1] * (0.8 + 0.4 * random())`, rounded
 * to a whole millisecond, so random() = 0 gives 80 %, 0.5 gives 100 % and values
 * near 1 approach 120 %. A Retry-After (capped at 24 h) raises it, never lowers it;
 * it does not extend an exhausted schedule. With attemptsSoFar below 1 (or past
 * the end) there is no entry, hence undefined.
 */
export function nextDelayMs(
  attemptsSoFar: number,
  scheduleMs: readonly number[],
  random: () => number,
  retryAfterMs?: number,
): number | undefined {
  const baseMs = scheduleMs[attemptsSoFar - 1];
  if (baseMs === undefined) return undefined;
  const jitteredMs = Math.round(baseMs * (1 - JITTER + 2 * JITTER * random()));
  if (retryAfterMs === undefined) return jitteredMs;
  return Math.max(jitteredMs, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

const WEEKDAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_WEEKDAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// The three forms RFC 9110 §5.6.7 obliges a recipient to accept. Date.parse alone
// would also take "1.5" or "2024-01-01" (local time), which are not HTTP-dates.
const IMF_FIXDATE = new RegExp(`^${WEEKDAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_WEEKDAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${WEEKDAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * Milliseconds to wait from `nowMs` according to a Retry-After header
 * (delta-seconds or HTTP-date; a date in the past gives 0), or undefined
 * when there is no header or it is not valid.
 */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, Number.MAX_SAFE_INTEGER);
  const dateMs = parseHttpDate(text, nowMs);
  return dateMs === undefined ? undefined : Math.max(0, dateMs - nowMs);
}

function parseHttpDate(text: string, nowMs: number): number | undefined {
  let parts: [day: string, month: string, year: number, hour: string, minute: string, second: string];
  let match = IMF_FIXDATE.exec(text);
  if (match) {
    const [, day = '', month = '', year = '', hour = '', minute = '', second = ''] = match;
    parts = [day, month, Number(year), hour, minute, second];
  } else if ((match = RFC850_DATE.exec(text))) {
    const [, day = '', month = '', yy = '', hour = '', minute = '', second = ''] = match;
    parts = [day, month, twoDigitYear(Number(yy), nowMs), hour, minute, second];
  } else if ((match = ASCTIME_DATE.exec(text))) {
    const [, month = '', day = '', hour = '', minute = '', second = '', year = ''] = match;
    parts = [day.trim(), month, Number(year), hour, minute, second];
  } else {
    return undefined;
  }
  const [day, month, year, hour, minute, second] = parts;
  const ms = Date.UTC(year, MONTHS.indexOf(month), Number(day), Number(hour), Number(minute), Number(second));
  // Date.UTC rolls over (31 Feb becomes 3 Mar); an impossible date is not a date.
  return new Date(ms).getUTCDate() === Number(day) ? ms : undefined;
}

/** RFC 9110: a two-digit year more than 50 years ahead means the century before. */
function twoDigitYear(yy: number, nowMs: number): number {
  const nowYear = new Date(nowMs).getUTCFullYear();
  const year = nowYear - (nowYear % 100) + yy;
  return year > nowYear + 50 ? year - 100 : year;
}
