/**
 * The error catalogue: every error the HTTP API answers with, by its stable code, with its
 * status and its message template. An answer is
 * `{"statusCode": 400, "error": "Bad Request", "code": "FIELD_REQUIRED", "message": "body.name: required"}`:
 * clients branch on `code`; the message is for people, names the field (header, parameter,
 * attribute) at fault first and, where there is one, says what to do next. docs/errors.md
 * describes each code; a test keeps the two in step.
 *
 * In templates, `field` is where the fault is, written as the messages write it:
 * `body.auth.type`, `querystring.limit`, `ce-id`, `[2].source`, `content-type`.
 */
import { STATUS_CODES } from 'node:http';

interface Definition<Args extends unknown[]> {
  readonly status: number;
  readonly message: (...args: Args) => string;
}

const define = <Args extends unknown[]>(status: number, message: (...args: Args) => string): Definition<Args> => ({ status, message });

const fieldProblem = (field: string, problem: string) => `${field}: ${problem}`;

export const ERRORS = {
  // 400: something in the request, named in the message, must change.
  FIELD_REQUIRED: define(400, (field: string, condition?: string) => `${field}: required${condition === undefined ? '' : ` ${condition}`}`),
  FIELD_UNKNOWN: define(400, (object: string, name: string) => `${object}: unknown field "${name}"`),
  /** `expected`: "a string", "an object", "a string, an integer or a boolean". */
  FIELD_TYPE: define(400, (field: string, expected: string) => `${field}: must be ${expected}`),
  /** The right type, a value not allowed: too long, empty, a bad extension name, control characters. */
  FIELD_INVALID: define(400, fieldProblem),
  TARGET_URL_INVALID: define(400, (problem: string) => `body.target_url: ${problem}`),
  /** `refusal`: what the address guard said, e.g. "address 10.0.0.1 is denied by NOTIFICATIONS_TARGET_DENY". */
  TARGET_DENIED: define(400, (refusal: string) => `body.target_url: ${refusal}`),
  /** `answer`: what the target did instead of consenting, e.g. "answered 405 without WebHook-Allowed-Origin". */
  TARGET_CONSENT_REFUSED: define(
    400,
    (answer: string) => `body.target_url: the target did not consent to deliveries (NOTIFICATIONS_TARGET_VALIDATION=handshake): ${answer}`,
  ),
  /** `syntax`: a JsonPathSyntaxError's message, with the position where reading stopped (also sent as `position`: jsonPathSyntax). */
  JSONPATH_SYNTAX: define(400, (field: string, syntax: string) => `${field}: ${syntax}`),
  QUERY_PARAMETER_INVALID: define(400, fieldProblem),
  /** A recover whose window holds more deliveries than one transaction should rewrite: nothing was queued. */
  RECOVER_WINDOW_TOO_LARGE: define(
    400,
    (found: number, limit: number) =>
      `body.since: the window holds ${found} failed or cancelled deliveries, more than the ${limit} one recover queues again; nothing was queued; recover narrower windows (a later since, or an until) one after another`,
  ),
  BODY_NOT_JSON: define(400, (problem: string) => `body: ${problem}`),
  BODY_TOO_DEEP: define(400, (field: string, maxDepth: number) => `${field}: nested deeper than ${maxDepth} levels`),
  BODY_INCOMPLETE: define(400, (problem: string) => `body: ${problem}`),
  /** A CloudEvent that breaks its spec version's rules; `field` is the attribute, header or batch member. */
  CLOUDEVENT_INVALID: define(400, fieldProblem),
  IDENTITY_HEADER_REPEATED: define(400, (header: string) => `the ${header} header is given more than once`),
  PATH_INVALID: define(
    400,
    (path: string) => `path: ${path} is not a valid URL path (a % must start an escape of two hex digits, spelling UTF-8)`,
  ),
  /** Not HTTP/1.1 as Node's parser reads it, or refused by Fastify for a reason without a code of its own. */
  REQUEST_INVALID: define(400, (problem: string) => `request: ${problem}`),

  /** `missing`: what is missing or wrong ("missing identity"); `requirement`: what the route needs. */
  UNAUTHENTICATED: define(401, (missing: string, requirement: string) => `${missing}: ${requirement}`),
  /** The identity header came from a peer outside NOTIFICATIONS_TRUSTED_PROXIES: anyone could have written it. */
  IDENTITY_UNTRUSTED: define(
    401,
    (header: string, peer: string) =>
      `${header}: not honoured from ${peer}, which is not a trusted proxy (NOTIFICATIONS_TRUSTED_PROXIES); send the request through the front proxy`,
  ),

  /** `site`: the Sec-Fetch-Site the browser sent (cross-site, same-site). */
  CROSS_SITE_REQUEST: define(
    403,
    (site: string) =>
      `sec-fetch-site: "${site}": the service does not act on a request a page of another site made the browser send; use the console at /console/, or a client that is not a browser`,
  ),

  /** A POST /receive from a peer outside NOTIFICATIONS_RECEIVE_ALLOW; nothing of it is logged. */
  RECEIVE_FORBIDDEN: define(403, (peer: string) => `/receive: not accepted from ${peer}, which is not in NOTIFICATIONS_RECEIVE_ALLOW`),
  /** The user holds `limit` live subscriptions (disabled ones count) already: NOTIFICATIONS_USER_SUBSCRIPTIONS. */
  SUBSCRIPTION_LIMIT: define(
    403,
    (limit: number) =>
      `subscriptions: this user already holds ${limit} live subscriptions, the most NOTIFICATIONS_USER_SUBSCRIPTIONS allows (disabled ones count); delete one to create another`,
  ),

  /** Missing, deleted, malformed or someone else's: the same answer, so nothing is revealed. */
  SUBSCRIPTION_NOT_FOUND: define(404, (uuid: string) => `subscription ${uuid} not found`),
  /** Missing, malformed, or a match of another subscription: the same answer. */
  DELIVERY_NOT_FOUND: define(404, (elm: string, uuid: string) => `delivery ${elm} of subscription ${uuid} not found`),
  ROUTE_NOT_FOUND: define(404, (method: string, path: string) => `no such route: ${method} ${path}`),
  METHOD_NOT_ALLOWED: define(
    405,
    (method: string, path: string, allowed: readonly string[]) => `method ${method} not allowed on ${path}; use ${allowed.join(', ')}`,
  ),
  REQUEST_TIMEOUT: define(408, () => 'request: not received in time'),
  /** Reading events of a push subscription: they go to its target, there is nothing to read. */
  SUBSCRIPTION_NOT_PULL: define(
    409,
    (uuid: string) => `subscription ${uuid} delivers by push to its target_url; only a pull subscription's events are read here`,
  ),
  /** Retrying a delivery (or recovering deliveries) of a disabled subscription: they would only be cancelled. */
  SUBSCRIPTION_DISABLED: define(
    409,
    (uuid: string, asked: 'retry' | 'recover' = 'retry') =>
      `subscription ${uuid} is disabled; enable it first (PUT {"disabled": null}), then ${asked === 'retry' ? 'retry the delivery' : 'recover its deliveries'}`,
  ),
  /** A runner holds the delivery right now (in flight, or waiting its turn): a retry now could send it twice. */
  DELIVERY_IN_PROGRESS: define(
    409,
    (elm: string) => `delivery ${elm} is being worked on right now; ask again once it has settled (see Retry-After)`,
  ),
  BODY_TOO_LARGE: define(
    413,
    (limit: number | undefined) => `body: larger than the limit of ${limit ?? 'the configured'} bytes (NOTIFICATIONS_MAX_BODY)`,
  ),
  /** The Content-Type (or its charset) is not one the route reads. */
  MEDIA_TYPE_UNSUPPORTED: define(415, fieldProblem),
  CONTENT_ENCODING_UNSUPPORTED: define(
    415,
    (coding: string) => `content-encoding: "${coding}" is not supported; send the body without a content coding`,
  ),
  HEADERS_TOO_LARGE: define(
    431,
    () => "headers: the request line and headers are larger than the server accepts (Node's limit, 16 KiB by default)",
  ),

  /** What went wrong is logged with the request id; the answer says no more than that. */
  INTERNAL: define(500, () => 'internal error; the request id in the log tells what happened'),
  /** A subscription's stored `auth` does not open with this NOTIFICATIONS_SECRET_KEY; a PUT with new `auth` replaces it. */
  CREDENTIALS_UNREADABLE: define(500, (damage?: string) =>
    damage === undefined
      ? 'stored target credentials are encrypted; start the service with the NOTIFICATIONS_SECRET_KEY they were written with'
      : `stored target credentials are damaged (${damage})`,
  ),
  DATABASE_UNAVAILABLE: define(
    503,
    (timeoutMs: number) => `database: unavailable, or no answer within ${timeoutMs / 1000} s; try again later`,
  ),
  /** The database refuses writes for lack of space (SQLITE_FULL, PostgreSQL 53100): nothing of the request was kept. */
  STORAGE_FULL: define(
    503,
    () => 'database: out of space, writes are refused; nothing of this request was kept; send it again after Retry-After seconds',
  ),
  /** A request on a kept-alive connection after the instance began to stop; another instance, or this one restarted, will answer. */
  SHUTTING_DOWN: define(503, () => 'server: shutting down; send the request again, on a new connection'),
} as const;

export type ErrorCode = keyof typeof ERRORS;
type MessageArguments<C extends ErrorCode> = Parameters<(typeof ERRORS)[C]['message']>;

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

function statusOf(code: ErrorCode): number {
  return ERRORS[code].status;
}

export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly statusCode: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Sent as Retry-After: when asking again may succeed. */
    readonly retryAfterSeconds?: number,
    /** Members the answer carries beside the four every error has. */
    readonly details?: ErrorDetails,
  ) {
    super(message);
    this.statusCode = statusOf(code);
  }
}

/** The error of `code`, its message made from the code's template. */
export function serviceError<C extends ErrorCode>(code: C, ...args: MessageArguments<C>): ServiceError {
  const template = ERRORS[code].message as (...a: MessageArguments<C>) => string;
  return new ServiceError(code, template(...args));
}

/**
 * An expression no dialect reads: the answer also carries `position`, the 0-based offset into it
 * (in UTF-16 code units, as JavaScript indexes a string) where reading stopped, so that a client
 * can mark it without parsing the message.
 */
export function jsonPathSyntax(field: string, syntax: string, position: number): ServiceError {
  return new ServiceError('JSONPATH_SYNTAX', ERRORS.JSONPATH_SYNTAX.message(field, syntax), undefined, { position });
}

export const subscriptionNotFound = (uuid: string) => serviceError('SUBSCRIPTION_NOT_FOUND', uuid);
/**
 * The database did not answer within NOTIFICATIONS_DATABASE_TIMEOUT, or is not reachable: the
 * request may be sent again, after about as long.
 */
export const databaseUnavailable = (timeoutMs: number) =>
  new ServiceError('DATABASE_UNAVAILABLE', ERRORS.DATABASE_UNAVAILABLE.message(timeoutMs), Math.max(1, Math.ceil(timeoutMs / 1000)));
/** How long a client is asked to wait before sending again a request refused for lack of space: freeing space takes an operator. */
export const STORAGE_FULL_RETRY_SECONDS = 30;
export const storageFull = () => new ServiceError('STORAGE_FULL', ERRORS.STORAGE_FULL.message(), STORAGE_FULL_RETRY_SECONDS);
export const unsupportedJsonBody = () => serviceError('MEDIA_TYPE_UNSUPPORTED', 'body', 'unsupported Content-Type; send application/json');

/** What some codes add to their answers: JSONPATH_SYNTAX, where reading the expression stopped. */
export interface ErrorDetails {
  position?: number;
}

export interface ErrorBody extends ErrorDetails {
  statusCode: number;
  error: string;
  code: ErrorCode;
  message: string;
}

export function errorBody(code: ErrorCode, message: string, details?: ErrorDetails): ErrorBody {
  const statusCode = statusOf(code);
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', code, message, ...details };
}
