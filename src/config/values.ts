// Parsers for configuration values. Each takes the raw text of one setting and
// returns the typed value, or throws InvalidValue whose reason completes the
// sentence `<setting>: "<value>" <reason>`.
import { BlockList, isIP } from 'node:net';
import { noProxyEntry, proxyUrlProblem } from '../net/egress-proxy.js';
import { Keyring } from './keyring.js';

export class InvalidValue extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'InvalidValue';
  }
}

export type ParseValue<T> = (raw: string) => T;

// Node's setTimeout fires at once (with a warning) for delays above 2^31-1 ms,
// about 24.8 days, so no duration may exceed it.
const MAX_DURATION_MS = 2 ** 31 - 1;

const MS_PER_UNIT = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION_FORM = 'an integer followed by ms, s, m, h or d, e.g. "30s"';

/** `max` (ms) defaults to what setTimeout can wait; a duration never waited for may allow more. */
export function durationMs(options: { min: number; max?: number }): ParseValue<number> {
  const max = options.max ?? MAX_DURATION_MS;
  return (raw) => {
    const match = /^(\d+)(ms|s|m|h|d)$/.exec(raw);
    if (match === null) {
      if (/^\d+$/.test(raw)) throw new InvalidValue(`has no unit (write ms, s, m, h or d after the number, e.g. "${raw}s")`);
      throw new InvalidValue(`is not a duration (${DURATION_FORM})`);
    }
    const ms = Number(match[1]) * MS_PER_UNIT[match[2] as keyof typeof MS_PER_UNIT];
    if (ms < options.min) throw new InvalidValue(`is too short (at least ${options.min}ms)`);
    if (ms > max) throw new InvalidValue(`is too long (at most ${Math.floor(max / MS_PER_UNIT.d)}d)`);
    return ms;
  };
}

// A hundred years: compared with timestamps, never waited for, so not held to 24d.
const MAX_RETENTION_MS = 36_500 * MS_PER_UNIT.d;
const RETENTION_FORM = 'write a duration such as "30d", or "off" to keep every event';
const retentionDuration = durationMs({ min: 1, max: MAX_RETENTION_MS });

/** How long events are kept: a duration of at least 1ms, or `off` (kept for ever). */
export function parseRetention(raw: string): number | 'off' {
  if (raw === 'off') return 'off';
  if (/^0+(ms|s|m|h|d)?$/.test(raw)) throw new InvalidValue(`would purge every event as soon as it is finished; ${RETENTION_FORM}`);
  if (raw.startsWith('-')) throw new InvalidValue(`is negative; ${RETENTION_FORM}`);
  try {
    return retentionDuration(raw);
  } catch (error) {
    if (!(error instanceof InvalidValue)) throw error;
    throw new InvalidValue(`${error.reason}; ${RETENTION_FORM}`);
  }
}

/** The most live subscriptions one user may hold: an integer of at least 1, or `off` (no limit). */
export function parseSubscriptionLimit(raw: string): number | 'off' {
  if (raw === 'off') return 'off';
  const limit = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!(limit >= 1)) throw new InvalidValue('is not an integer from 1 to 999999999; write "off" for no limit');
  return limit;
}

const BYTES_PER_UNIT = { b: 1, kb: 1024, mb: 1024 * 1024 } as const;

/** Sizes use binary multiples: 1kb = 1024 bytes, 1mb = 1,048,576 bytes. */
export function parseSizeBytes(raw: string): number {
  const match = /^(\d+)(b|kb|mb)?$/i.exec(raw);
  const form = 'an integer of bytes, optionally followed by b, kb or mb, e.g. "1mb"';
  if (match === null) throw new InvalidValue(`is not a size (${form})`);
  const unit = (match[2] ?? 'b').toLowerCase() as keyof typeof BYTES_PER_UNIT;
  const bytes = Number(match[1]) * BYTES_PER_UNIT[unit];
  if (bytes < 1) throw new InvalidValue('is too small (at least 1 byte)');
  if (!Number.isSafeInteger(bytes)) throw new InvalidValue(`is too large (${form})`);
  return bytes;
}

/** A comma-separated list; blanks around entries are ignored, empty entries are not. "" is the empty list. */
export function listOf<T>(parseEntry: ParseValue<T>): ParseValue<readonly T[]> {
  return (raw) => {
    if (raw === '') return [];
    const entries = raw.split(',').map((part) => part.trim());
    return entries.map((entry) => {
      if (entry === '') throw new InvalidValue('has an empty entry (write entries separated by single commas)');
      try {
        return parseEntry(entry);
      } catch (error) {
        if (!(error instanceof InvalidValue) || entries.length === 1) throw error;
        throw new InvalidValue(`contains "${entry}", which ${error.reason}`);
      }
    });
  };
}

export function parsePort(raw: string): number {
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port <= 65535)) throw new InvalidValue('is not a port (an integer from 0 to 65535)');
  return port;
}

export function integerFrom(min: number, max: number): ParseValue<number> {
  return (raw) => {
    const value = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
    if (!(value >= min && value <= max)) throw new InvalidValue(`is not an integer from ${min} to ${max}`);
    return value;
  };
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

export function parseListenAddress(raw: string): string {
  if (isIP(raw) === 0 && !HOST_NAME.test(raw)) {
    throw new InvalidValue('is not an address to listen on (an IPv4 or IPv6 address, or a host name such as localhost)');
  }
  return raw;
}

export function parseDatabaseUrl(raw: string): string {
  const form = 'sqlite:<path>, sqlite::memory: or postgres://user:pass@host:port/db';
  if (raw.startsWith('sqlite:')) {
    if (raw.length === 'sqlite:'.length) throw new InvalidValue(`has no file path (${form})`);
    return raw;
  }
  if (/^postgres(ql)?:\/\//.test(raw) && URL.canParse(raw)) return raw;
  throw new InvalidValue(`is not a database URL (${form})`);
}

export function parseHttpUrl(raw: string): string {
  const protocol = URL.canParse(raw) ? new URL(raw).protocol : '';
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new InvalidValue('is not an absolute http:// or https:// URL');
  }
  return raw;
}

/** An egress proxy: `http://host:port`, with `user:password@` at most (sent as Proxy-Authorization). */
export function parseProxyUrl(raw: string): string {
  const problem = proxyUrlProblem(raw);
  if (problem !== null) throw new InvalidValue(problem);
  return raw;
}

/** One NO_PROXY entry (a name, .domain, an address or CIDR block, :port, or *); kept as written. */
export function parseNoProxyEntry(raw: string): string {
  try {
    noProxyEntry(raw);
  } catch (error) {
    throw new InvalidValue(error instanceof Error ? error.message : String(error));
  }
  return raw;
}

// The token grammar of RFC 9110 section 5.6.2.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Stored lower-cased because Node lower-cases the names of incoming headers. */
export function parseHeaderName(raw: string): string {
  if (!HEADER_NAME.test(raw)) throw new InvalidValue("is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)");
  return raw.toLowerCase();
}

export function parseNonEmpty(raw: string): string {
  if (raw.trim() === '') throw new InvalidValue('is blank (leave the setting unset instead)');
  return raw;
}

/** A WebHook-Request-Origin value, such as `notifications.example.org`: one header-safe word. */
export function parseOriginName(raw: string): string {
  if (!/^[\x21-\x7e]+$/.test(raw)) throw new InvalidValue('is not an origin name (visible ASCII characters, no spaces)');
  return raw;
}

/** A bearer token travels in the Authorization header, so only visible ASCII can ever match. */
export function parseBearerToken(raw: string): string {
  if (!/^[\x21-\x7e]+$/.test(raw)) throw new InvalidValue('is not a bearer token (visible ASCII characters, no spaces)');
  return raw;
}

/** Normalizes to `address/prefix`; a bare address is a single host (/32 or /128). */
export function parseCidr(raw: string): string {
  const form = 'is not a CIDR block (an IPv4 or IPv6 address, optionally followed by /prefix, e.g. 10.0.0.0/8 or fd00::/8)';
  const slash = raw.indexOf('/');
  const address = slash < 0 ? raw : raw.slice(0, slash);
  const version = raw.includes('%') ? 0 : isIP(address);
  if (version === 0) throw new InvalidValue(form);
  const bits = version === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(bits) : raw.slice(slash + 1);
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix <= bits)) throw new InvalidValue(`has a prefix outside 0 to ${bits}`);
  try {
    new BlockList().addSubnet(address, prefix, version === 4 ? 'ipv4' : 'ipv6');
  } catch {
    throw new InvalidValue(form);
  }
  return `${address}/${prefix}`;
}

const HOW_TO_MAKE_A_KEY = 'make one with: openssl rand -base64 32';

/** 32 bytes, as 64 hex characters or 44 base64 characters. Surrounding blanks (a newline from a file) are ignored. */
export function parseSecretKey(raw: string): Buffer {
  const text = raw.trim();
  if (/^[0-9a-f]{64}$/i.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(text)) return Buffer.from(text, 'base64');
  throw new InvalidValue(`is not 32 bytes written as 64 hex characters or 44 base64 characters; ${HOW_TO_MAKE_A_KEY}`);
}

/**
 * NOTIFICATIONS_SECRET_KEY: one key, or several separated by commas (the first seals, any
 * opens). A wrong one is named by its place, never quoted: it is a secret.
 */
export function parseKeyring(raw: string): Keyring {
  const entries = raw.split(',');
  return new Keyring(
    entries.map((entry, index) => {
      if (entry.trim() === '') throw new InvalidValue('has an empty key (write keys separated by single commas)');
      try {
        return parseSecretKey(entry);
      } catch (error) {
        if (!(error instanceof InvalidValue) || entries.length === 1) throw error;
        throw new InvalidValue(`has a key (number ${index + 1} of ${entries.length}) that ${error.reason}`);
      }
    }),
  );
}

export function oneOf<T extends string>(choices: readonly T[]): ParseValue<T> {
  return (raw) => {
    const choice = choices.find((candidate) => candidate === raw);
    if (choice === undefined) throw new InvalidValue(`is not one of ${choices.join(', ')}`);
    return choice;
  };
}
