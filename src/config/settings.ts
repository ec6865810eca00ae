// Every setting of the service in one table: environment variable, optional
// flag, default (as text, parsed like any given value), parser, description.
import { DIALECT_MODES, type DialectMode } from '../jsonpath/index.js';
import { LOOPBACK_CIDRS } from '../net/peer-list.js';
import { maskUrlPassword } from '../url-password.js';
import { Keyring } from './keyring.js';
import {
  durationMs,
  integerFrom,
  listOf,
  oneOf,
  type ParseValue,
  parseBearerToken,
  parseCidr,
  parseDatabaseUrl,
  parseHeaderName,
  parseHttpUrl,
  parseListenAddress,
  parseNonEmpty,
  parseNoProxyEntry,
  parseOriginName,
  parsePort,
  parseProxyUrl,
  parseRetention,
  parseKeyring,
  parseSizeBytes,
  parseSubscriptionLimit,
} from './values.js';

export const TARGET_VALIDATIONS = ['off', 'handshake'] as const;
export type TargetValidation = (typeof TARGET_VALIDATIONS)[number];

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_REQUESTS = ['off', 'errors', 'all'] as const;
export type LogRequests = (typeof LOG_REQUESTS)[number];

/** The validated, deeply frozen configuration. Durations are in milliseconds, sizes in bytes. */
export interface Config {
  readonly databaseUrl: string;
  readonly address: string;
  readonly port: number;
  /** null: no policy service, every delivery is allowed. */
  readonly policyUrl: string | null;
  /** Lower-cased. */
  readonly userHeader: string;
  /** null: a request without the user header is answered 401. */
  readonly defaultUser: string | null;
  /** null: /receive needs no token. */
  readonly receiveToken: string | null;
  /** Normalized CIDR blocks of the peers whose identity header, default user and X-Request-Id are believed. */
  readonly trustedProxies: readonly string[];
  /** Normalized CIDR blocks of the peers that may POST /receive; null: any peer. */
  readonly receiveAllow: readonly string[] | null;
  /** One delay per retry; after the last one the delivery fails. */
  readonly retryDelaysMs: readonly number[];
  readonly targetTimeoutMs: number;
  /** Deliveries in flight at once to one target origin (scheme, host, port). */
  readonly targetConcurrency: number;
  /** A connection, a statement or a lock is waited for this long at most; then 503. */
  readonly databaseTimeoutMs: number;
  readonly maxBodyBytes: number;
  /** Normalized CIDR blocks, `address/prefix`. */
  readonly targetAllow: readonly string[];
  readonly targetDeny: readonly string[];
  /** The http:// proxy of deliveries and policy calls; null: HTTPS_PROXY and HTTP_PROXY, or direct (see config/egress.ts). */
  readonly egressProxy: string | null;
  /** Targets reached without the proxy, as written; null: NO_PROXY. */
  readonly egressNoProxy: readonly string[] | null;
  /** null: target credentials are stored as given. Its keys are not frozen: Node cannot freeze a Buffer. */
  readonly secretKey: Keyring | null;
  /** After a rotation, deliveries are signed with the previous signing secret too for this long. */
  readonly secretOverlapMs: number;
  /** `handshake`: a target must consent (CloudEvents webhook validation) before it is stored. */
  readonly targetValidation: TargetValidation;
  /** WebHook-Request-Origin; null: this host's name. */
  readonly origin: string | null;
  readonly jsonpathDialect: DialectMode;
  readonly logLevel: LogLevel;
  /** Which requests get a log line (one each). */
  readonly logRequests: LogRequests;
  readonly leaseMs: number;
  readonly shutdownGraceMs: number;
  /** Finished events received longer ago than this are purged; `off`: every event is kept. */
  readonly retentionMs: number | 'off';
  /** Live subscriptions (deleted ones are not; disabled ones are) one user may hold; `off`: no limit. */
  readonly userSubscriptions: number | 'off';
}

/** What is known of a setting regardless of its type. */
export interface SettingInfo {
  readonly env: `NOTIFICATIONS_${string}`;
  readonly flag?: `--${string}`;
  /** Text parsed like a given value; null (only for nullable settings) means unset. */
  readonly default: string | null;
  /** What an unset nullable setting means, for --help. */
  readonly whenUnset?: string;
  /** secret: never shown; url: shown with its password masked. */
  readonly sensitive?: 'secret' | 'url';
  readonly description: string;
}

export interface Setting<V> extends SettingInfo {
  readonly default: null extends V ? string | null : string;
  readonly parse: ParseValue<NonNullable<V>>;
}

// 1s+5s+30s+2m+10m+30m+1h+2h+4h+8h+9h = 24h42m36s: a target that is down for a
// whole day still gets its events. (With 8h as the last delay the sum would be
// 23h42m36s, short of the day.)
const DEFAULT_RETRY_DELAYS = '1s,5s,30s,2m,10m,30m,1h,2h,4h,8h,9h';

export const SETTINGS: { readonly [K in keyof Config]: Setting<Config[K]> } = {
  databaseUrl: {
    env: 'NOTIFICATIONS_DATABASE_URL',
    flag: '--database-url',
    default: 'sqlite:./notifications.sqlite3',
    parse: parseDatabaseUrl,
    sensitive: 'url',
    description: 'sqlite:<path> (relative or absolute), sqlite::memory:, or postgres://user:pass@host:port/db',
  },
  address: {
    env: 'NOTIFICATIONS_ADDRESS',
    flag: '--address',
    default: '127.0.0.1',
    parse: parseListenAddress,
    description: 'address the HTTP server listens on',
  },
  port: {
    env: 'NOTIFICATIONS_PORT',
    flag: '--port',
    default: '8070',
    parse: parsePort,
    description: 'port the HTTP server listens on (0: any free port)',
  },
  policyUrl: {
    env: 'NOTIFICATIONS_POLICY_URL',
    default: null,
    whenUnset: 'allow-all mode',
    parse: parseHttpUrl,
    sensitive: 'url',
    description: 'base URL of the policy service',
  },
  userHeader: {
    env: 'NOTIFICATIONS_USER_HEADER',
    default: 'Http-Remote-User',
    parse: parseHeaderName,
    description: 'request header that names the user',
  },
  defaultUser: {
    env: 'NOTIFICATIONS_DEFAULT_USER',
    flag: '--default-user',
    default: null,
    whenUnset: 'answer 401',
    parse: parseNonEmpty,
    description: 'user assumed when the user header is absent',
  },
  receiveToken: {
    env: 'NOTIFICATIONS_RECEIVE_TOKEN',
    default: null,
    whenUnset: 'open',
    parse: parseBearerToken,
    sensitive: 'secret',
    description: 'bearer token required on /receive',
  },
  trustedProxies: {
    env: 'NOTIFICATIONS_TRUSTED_PROXIES',
    default: LOOPBACK_CIDRS.join(','),
    parse: listOf(parseCidr),
    description:
      'comma-separated CIDR blocks of the front proxies: only on connections from them are the user header, the default user and X-Request-Id believed',
  },
  receiveAllow: {
    env: 'NOTIFICATIONS_RECEIVE_ALLOW',
    default: null,
    whenUnset: 'any peer',
    parse: listOf(parseCidr),
    description: 'comma-separated CIDR blocks of the peers that may POST /receive; others are answered 403 and not logged',
  },
  retryDelaysMs: {
    env: 'NOTIFICATIONS_RETRY_DELAYS',
    default: DEFAULT_RETRY_DELAYS,
    parse: listOf(durationMs({ min: 0 })),
    description: 'comma-separated delays before each retry of a delivery; after the last the delivery fails',
  },
  targetTimeoutMs: {
    env: 'NOTIFICATIONS_TARGET_TIMEOUT',
    default: '10s',
    parse: durationMs({ min: 1 }),
    description: 'time-out of each request to a target or to the policy service',
  },
  targetConcurrency: {
    env: 'NOTIFICATIONS_TARGET_CONCURRENCY',
    default: '16',
    parse: integerFrom(1, 1024),
    description:
      'connections, and so deliveries on the wire at once, to one target origin (scheme, host, port); a slow target fills only its own share',
  },
  databaseTimeoutMs: {
    env: 'NOTIFICATIONS_DATABASE_TIMEOUT',
    default: '5s',
    parse: durationMs({ min: 100 }),
    description:
      'longest wait for the database (a connection, a statement, a lock) before a request is answered 503; also the statement time-out',
  },
  maxBodyBytes: {
    env: 'NOTIFICATIONS_MAX_BODY',
    default: '1mb',
    parse: parseSizeBytes,
    description: 'largest accepted request body (b, kb, mb; 1kb = 1024 bytes)',
  },
  targetAllow: {
    env: 'NOTIFICATIONS_TARGET_ALLOW',
    default: '',
    parse: listOf(parseCidr),
    description: 'comma-separated CIDR blocks targets must be in (none: any address not denied)',
  },
  targetDeny: {
    env: 'NOTIFICATIONS_TARGET_DENY',
    default: '0.0.0.0/8,::/128,169.254.0.0/16,fe80::/10,100.100.100.200/32,fd00:ec2::254/128',
    parse: listOf(parseCidr),
    description:
      'comma-separated CIDR blocks targets may not be in (default: 0.0.0.0/8 and ::, which reach this host, link-local and cloud metadata); ' +
      'the IPv4-mapped and NAT64 (64:ff9b::/96) forms of a denied IPv4 address are denied too',
  },
  egressProxy: {
    env: 'NOTIFICATIONS_EGRESS_PROXY',
    default: null,
    whenUnset: 'HTTPS_PROXY and HTTP_PROXY, else direct',
    parse: parseProxyUrl,
    sensitive: 'url',
    description:
      'http://[user:password@]host:port of the HTTP proxy that deliveries to http(s) targets, the consent handshake and policy calls go through ' +
      '(https targets by CONNECT); the service resolves the target itself and asks the proxy for the address the target guard permitted. ' +
      'Broker destinations do not use it',
  },
  egressNoProxy: {
    env: 'NOTIFICATIONS_EGRESS_NO_PROXY',
    default: null,
    whenUnset: 'NO_PROXY',
    parse: listOf(parseNoProxyEntry),
    description:
      'comma-separated targets reached without the egress proxy: host names (which match their subdomains too), .domain (its subdomains), ' +
      'IP addresses and CIDR blocks (matching targets written as addresses), each optionally with :port, or * for all',
  },
  secretKey: {
    env: 'NOTIFICATIONS_SECRET_KEY',
    default: null,
    whenUnset: 'credentials stored as given',
    parse: parseKeyring,
    sensitive: 'secret',
    description:
      'key encrypting stored target credentials and signing secrets: 32 bytes in hex or base64 (openssl rand -base64 32); ' +
      'several keys separated by commas rotate: the first seals, any of them opens (svc-notifications-cmd reseal seals everything under the first)',
  },
  secretOverlapMs: {
    env: 'NOTIFICATIONS_SECRET_OVERLAP',
    default: '24h',
    parse: durationMs({ min: 0 }),
    description:
      "after a subscription's signing secret is rotated, deliveries also carry a signature made with the previous secret for this long",
  },
  targetValidation: {
    env: 'NOTIFICATIONS_TARGET_VALIDATION',
    default: 'off',
    parse: oneOf(TARGET_VALIDATIONS),
    description:
      'handshake: creating a subscription or changing its target_url first asks the target for consent (CloudEvents webhook validation, an OPTIONS request); off: targets are not asked',
  },
  origin: {
    env: 'NOTIFICATIONS_ORIGIN',
    default: null,
    whenUnset: "this host's name",
    parse: parseOriginName,
    description: 'the name this service gives targets as WebHook-Request-Origin, in the handshake and on every delivery after it',
  },
  jsonpathDialect: {
    env: 'NOTIFICATIONS_JSONPATH_DIALECT',
    default: 'auto',
    parse: oneOf(DIALECT_MODES),
    description: `JSONPath dialect of subscriptions: ${DIALECT_MODES.join(', ')}`,
  },
  logLevel: {
    env: 'NOTIFICATIONS_LOG_LEVEL',
    default: 'info',
    parse: oneOf(LOG_LEVELS),
    description: `least severe level logged: ${LOG_LEVELS.join(', ')}`,
  },
  logRequests: {
    env: 'NOTIFICATIONS_LOG_REQUESTS',
    default: 'errors',
    parse: oneOf(LOG_REQUESTS),
    description:
      'which requests get a log line, one each at info level with method, url, status, time and request id: errors (those answered 4xx or 5xx), all, or off',
  },
  leaseMs: {
    env: 'NOTIFICATIONS_LEASE',
    default: '30s',
    parse: durationMs({ min: 1 }),
    description: 'how long a claimed delivery stays claimed; must exceed the target time-out',
  },
  shutdownGraceMs: {
    env: 'NOTIFICATIONS_SHUTDOWN_GRACE',
    default: '10s',
    parse: durationMs({ min: 0 }),
    description: 'how long shutdown waits for deliveries in flight',
  },
  retentionMs: {
    env: 'NOTIFICATIONS_RETENTION',
    default: '30d',
    parse: parseRetention,
    description: 'finished events received longer ago than this are purged, with their matches and attempts (off: keep every event)',
  },
  userSubscriptions: {
    env: 'NOTIFICATIONS_USER_SUBSCRIPTIONS',
    default: '1000',
    parse: parseSubscriptionLimit,
    description:
      'live subscriptions one user may hold, disabled ones included (deleted ones are not); a create beyond it is answered 403 SUBSCRIPTION_LIMIT (off: no limit)',
  },
};

export const SETTING_KEYS = Object.keys(SETTINGS) as ReadonlyArray<keyof Config>;

export function describeSettings(): Array<{ name: string; flag?: string; default: string; description: string }> {
  return SETTING_KEYS.map((key) => {
    const setting: SettingInfo = SETTINGS[key];
    return {
      name: setting.env,
      ...(setting.flag === undefined ? {} : { flag: setting.flag }),
      default: setting.default === null ? `unset: ${setting.whenUnset ?? 'none'}` : setting.default || 'none',
      description: setting.description,
    };
  });
}

export type LoggableValue = string | number | null | readonly string[] | readonly number[];

/** The configuration as a plain object safe to log: secrets become "(set)", URL passwords "***". */
export function redactedConfig(config: Config): Record<keyof Config, LoggableValue> {
  const entries = SETTING_KEYS.map((key): [keyof Config, LoggableValue] => {
    const value = config[key];
    const sensitive = SETTINGS[key].sensitive;
    if (value === null) return [key, null];
    if (sensitive === 'secret' || value instanceof Keyring) return [key, '(set)'];
    if (sensitive === 'url' && typeof value === 'string') return [key, maskUrlPassword(value)];
    return [key, Array.isArray(value) ? [...value] : value];
  });
  return Object.fromEntries(entries) as Record<keyof Config, LoggableValue>;
}
