/** How the console shows times, states and statuses. */
import type { DeliveryState, Subscription } from './api.js';
import { html } from './html.js';
import type { VNode } from './vendor/preact.js';

/** The API's timestamps are UTC without a zone: `2026-11-23T21:23:37.304925`. */
export function parseTimestamp(text: string): Date {
  return new Date(`${text.slice(0, 23)}Z`);
}

/** A moment as a datetime-local input shows it: the reader's local time, to the minute. */
export function localInputValue(date: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}T${two(date.getHours())}:${two(date.getMinutes())}`;
}

/**
 * A datetime-local input's value (the reader's local time: a date-time without a zone is read so)
 * as the API's UTC timestamp, to the millisecond; undefined when it is not a time.
 */
export function apiTimestamp(localValue: string): string | undefined {
  const date = new Date(localValue);
  return localValue === '' || Number.isNaN(date.getTime()) ? undefined : date.toISOString().slice(0, 23);
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A time in the reader's zone, with the exact UTC value for machines and on hover. */
export function Time({ value }: { value: string }): VNode {
  const date = parseTimestamp(value);
  return html`<time datetime=${`${value}Z`} title=${`${value} UTC`}>${dateTime.format(date)}</time>`;
}

/** Active, or disabled (by its owner, or by delivery, with the target's answer). */
export function SubscriptionState({ subscription }: { subscription: Subscription }): VNode {
  if (subscription.disabled === null) return html`<span class="badge ok">Active</span>`;
  return html`<span class="state">
    <span class="badge off">Disabled</span>
    ${subscription.error === null ? null : html` <span class="state-error">${subscription.error}</span>`}
  </span>`;
}

const DELIVERY_STATES: Record<DeliveryState, { label: string; tone: string }> = {
  policy: { label: 'Awaiting policy check', tone: 'wait' },
  deliver: { label: 'Pending', tone: 'wait' },
  pending: { label: 'Pending: not read yet', tone: 'wait' },
  delivered: { label: 'Delivered', tone: 'ok' },
  denied: { label: 'Denied by policy', tone: 'off' },
  failed: { label: 'Failed', tone: 'bad' },
  cancelled: { label: 'Cancelled', tone: 'off' },
  expired: { label: 'Expired: never read', tone: 'off' },
};

export function DeliveryStateBadge({ state }: { state: DeliveryState }): VNode {
  const { label, tone } = DELIVERY_STATES[state];
  return html`<span class=${`badge ${tone}`}>${label}</span>`;
}

export const DIALECTS: Record<string, string> = { rfc9535: 'RFC 9535', jsonpath2: 'jsonpath2 (Pacifica)' };

/** A value selected by an expression, as JSON on one line. */
export function showValue(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** A value selected by an expression, as JSON: an object or array laid out over lines. */
export function showValueLaidOut(value: unknown): string {
  return value !== null && typeof value === 'object' ? JSON.stringify(value, null, 2) : showValue(value);
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * JSON text laid out over lines, two spaces a level, without parsing it: every string and
 * number stays as written (JSON.parse and JSON.stringify would turn 12345678901234567890 or
 * 1.50 into other numbers, and the event tried would not be the one sent). Only whitespace
 * outside strings changes. Text that is not JSON comes back laid out as far as it goes.
 */
export function indentJson(text: string): string {
  let out = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  const newline = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (inString) {
      out += char;
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (/\s/.test(char)) continue;
    if (char === '"') {
      inString = true;
      out += char;
    } else if (char === '{' || char === '[') {
      const close = char === '{' ? '}' : ']';
      const rest = text.slice(i + 1).trimStart();
      if (rest.startsWith(close)) {
        out += char + close;
        i = text.indexOf(close, i + 1);
      } else {
        depth++;
        out += char + newline();
      }
    } else if (char === '}' || char === ']') {
      depth = Math.max(0, depth - 1);
      out += newline() + char;
    } else if (char === ',') out += char + newline();
    else if (char === ':') out += ': ';
    else out += char;
  }
  return out;
}
