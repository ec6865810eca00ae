/** What one try ran into when it got no HTTP answer, in words for the attempt record. */
export interface NetworkFailure {
  readonly message: string;
  /** True when trying again cannot help (the address is refused by configuration, the URL is unusable). */
  readonly permanent: boolean;
}

/** Our own time-out of a whole exchange; carries its length so the message can name it. */
export class ExchangeTimeoutError extends Error {
  readonly code = 'EEXCHANGETIMEOUT';
  constructor(readonly timeoutMs: number) {
    super(`time-out after ${timeoutMs} ms`);
    this.name = 'ExchangeTimeoutError';
  }
}

/**
 * The egress proxy refused to open a tunnel or to forward a request (it answered CONNECT other
 * than 200, or 407), or could not be reached. Named by its origin, never by its credentials.
 */
export class EgressProxyError extends Error {
  readonly code = 'EEGRESSPROXY';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EgressProxyError';
  }
}

const SIMPLE_MESSAGES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  UND_ERR_SOCKET: 'connection closed before the answer was complete',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  // undici's timers have our length but start later (at connect, at send), so ours
  // normally fires first and these only name what happened if it did not.
  UND_ERR_CONNECT_TIMEOUT: 'time-out while connecting',
  UND_ERR_HEADERS_TIMEOUT: 'time-out waiting for the answer',
  UND_ERR_BODY_TIMEOUT: 'time-out reading the answer',
};

const PERMANENT_CODES = new Set(['ETARGETDENIED', 'ETARGETURL']);

/** A target URL the client cannot send to (not http or https, not a URL). */
export class TargetUrlError extends Error {
  readonly code = 'ETARGETURL';
  constructor(why: string) {
    super(`target URL is not usable: ${why}`);
    this.name = 'TargetUrlError';
  }
}

/** Describes an error thrown instead of an answer, and whether trying again could help. */
export function describeNetworkError(error: unknown): NetworkFailure {
  const cause = firstCause(error);
  const code = codeOf(cause);
  const text = cause instanceof Error ? cause.message : String(cause);
  if (cause instanceof ExchangeTimeoutError || cause instanceof EgressProxyError) return { message: text, permanent: false };
  if (PERMANENT_CODES.has(code)) return { message: text, permanent: true };
  const simple = SIMPLE_MESSAGES[code];
  if (simple !== undefined) return { message: simple, permanent: false };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') {
    const host = hostnameOf(cause);
    const why = code === 'EAI_AGAIN' ? 'temporary DNS failure' : 'no such name';
    return { message: `DNS lookup${host ? ` of ${host}` : ''} failed: ${why} (${code})`, permanent: false };
  }
  // Certificate problems are retried: an expired certificate is usually renewed
  // within the day the retry schedule lasts, and giving up would disable the subscription.
  if (/^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_)/.test(code)) {
    return { message: `TLS failed: ${text}`, permanent: false };
  }
  return { message: code && !text.includes(code) ? `${text} (${code})` : text, permanent: false };
}

/** Node reports a failed multi-address connect as an AggregateError of per-address errors. */
function firstCause(error: unknown): unknown {
  if (error instanceof AggregateError && codeOf(error) === '' && error.errors.length > 0) return error.errors[0];
  return error;
}

function codeOf(error: unknown): string {
  if (typeof error !== 'object' || error === null || !('code' in error)) return '';
  return typeof error.code === 'string' ? error.code : '';
}

function hostnameOf(error: unknown): string {
  if (typeof error !== 'object' || error === null || !('hostname' in error)) return '';
  return typeof error.hostname === 'string' ? error.hostname : '';
}
