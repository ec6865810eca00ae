import type { Dispatcher } from 'undici';
import type { AddressGuard } from '../net/address-guard.js';
import { type ClientTls, tlsIdentity } from '../net/client-tls.js';
import { type EgressSettings, NO_EGRESS_PROXY } from '../net/egress-proxy.js';
import { ExchangeDeadline } from '../net/exchange-deadline.js';
import { describeNetworkError } from '../net/network-error.js';
import { type ClientCredentials, TokenEndpointError, tokenEndpointClient } from '../net/oauth2-token-endpoint.js';
import { guardedHttpUrl } from '../net/http-url.js';
import { outboundDispatchers } from '../net/outbound-dispatcher.js';
import { parseRetryAfter } from '../runners/retry-schedule.js';
import { authorizationHeader } from '../subscriptions/authorization.js';
import type { Auth } from '../subscriptions/input.js';
import { type TokenSource, tokenSource } from './oauth2-tokens.js';
import { type Signing, signatureHeaders } from './signature.js';

export type { Auth } from '../subscriptions/input.js';

export interface TargetRequest {
  readonly url: string;
  readonly auth: Auth;
  /** The event, already serialized as structured-mode CloudEvents JSON. */
  readonly body: string;
  /** Signed (Standard Webhooks headers) right before it is sent, so each attempt has its own timestamp. */
  readonly signing?: Signing;
  /**
   * By when (ms from now) the exchange must be over: what is left of the delivery's lease. A
   * request waits for a free connection only as long as a whole exchange still fits before
   * then; otherwise it is not sent and comes back `busy`. Without it, it waits as long as it
   * takes.
   */
  readonly endWithinMs?: number;
  /** The delivery attempt's span (W3C trace context): sent as the `traceparent` header. */
  readonly traceparent?: string;
}

/**
 * One try. `status` is null when no answer came, and `error` then says why. When
 * the status line came but the body did not (time-out, reset), both are set: the
 * status is what the target decided, and it is what counts.
 */
export interface TargetResponse {
  status: number | null;
  error: string | null;
  /** No answer, and none could ever come: a denied address or an unusable URL. */
  permanent: boolean;
  durationMs: number;
  retryAfterMs?: number;
  /** A redirect's Location, as the target wrote it (cut to 512 characters): it is not followed. */
  location?: string;
  /** The first 1 KiB of the answer body, as UTF-8 (a character cut at the end is dropped). */
  bodyExcerpt: string;
  /** Not sent: no connection to the target came free in time (see `endWithinMs`). Not an attempt. */
  busy?: true;
}

export interface TargetClient {
  /** Never rejects for network problems: they come back as `error`. */
  post(target: TargetRequest): Promise<TargetResponse>;
  /** Waits for requests in flight, then closes every connection. */
  close(): Promise<void>;
}

export interface TargetClientOptions {
  /**
   * Covers the whole exchange: connecting, sending, the answer's headers and body; not the wait
   * for a free connection before it.
   */
  readonly timeoutMs: number;
  /** At most this many exchanges with one origin at once; the others wait their turn. */
  readonly connectionsPerOrigin: number;
  readonly guard: AddressGuard;
  /** Which targets go through which egress proxy; none unless given. */
  readonly egress?: EgressSettings;
  /**
   * WebHook-Request-Origin on every delivery, as the CloudEvents webhook specification asks of a
   * sender whose targets consented to that origin (NOTIFICATIONS_TARGET_VALIDATION=handshake).
   */
  readonly requestOrigin?: string;
  /** The clock that Retry-After dates, signature timestamps and token lifetimes are measured against; Date.now unless testing. */
  readonly now?: () => number;
  /** Where oauth2 access tokens come from; by default a token source of this client's own, with its guard and time-out. */
  readonly tokens?: TokenSource;
}

const CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';
const EXCERPT_BYTES = 1024;
/**
 * An answer body is read to its end so the connection can carry the next request,
 * but only up to 64 KiB: past that, a new connection costs less than reading on.
 */
const DRAIN_LIMIT_BYTES = 64 * 1024;

export function createTargetClient(options: TargetClientOptions): TargetClient {
  const { timeoutMs, connectionsPerOrigin, guard, requestOrigin, now = Date.now } = options;
  const dispatchers = outboundDispatchers({ timeoutMs, guard, egress: options.egress ?? NO_EGRESS_PROXY });
  const tokens = options.tokens ?? tokenSource(tokenEndpointClient({ timeoutMs, guard, dispatchers }), now);
  // One pool per origin (and client certificate): connections are kept alive and reused across
  // deliveries. undici's Pool costs about a tenth of the CPU of fetch per request here.
  const pools = new Map<string, Dispatcher>();
  // A request is handed to a pool only when one of the origin's connections is free: waiting in
  // the pool's own queue would count towards the time-out. The delivery runner hands over as
  // many requests again as an origin has connections, so that a freed connection takes the next
  // one here, without waiting for the main thread. Shared by an origin's pools: the limit is the origin's.
  const turnsByOrigin = new Map<string, Turns>();
  let closed = false;

  /**
   * The pool that connects to `origin` (directly or through the egress proxy), presenting
   * `tls`'s client certificate when given: TLS options are a connection's, so each certificate
   * has pools of its own.
   */
  function poolFor(origin: string, tls: ClientTls | undefined): Dispatcher {
    const key = `${origin} ${tlsIdentity(tls)}`;
    let pool = pools.get(key);
    if (!pool) {
      pool = dispatchers.outboundDispatcher({ origin, connections: connectionsPerOrigin, ...(tls === undefined ? {} : { tls }) });
      pools.set(key, pool);
    }
    return pool;
  }

  function turnsFor(origin: string): Turns {
    let turns = turnsByOrigin.get(origin);
    if (!turns) turnsByOrigin.set(origin, (turns = new Turns(connectionsPerOrigin)));
    return turns;
  }

  async function post(target: TargetRequest): Promise<TargetResponse> {
    if (closed) throw new Error('the target client is closed');
    const started = performance.now();
    let url: URL;
    try {
      url = guardedHttpUrl(target.url, guard);
    } catch (error) {
      return noAnswer(error, 0);
    }
    const oauth2 = oauth2Of(target);
    let token: string | undefined;
    if (oauth2 !== undefined) {
      try {
        token = await tokens.current(oauth2);
      } catch (error) {
        return tokenFailure(error);
      }
    }
    const pool = poolFor(url.origin, mtlsOf(target));
    const turns = turnsFor(url.origin);
    const leftMs = () => (target.endWithinMs === undefined ? Infinity : target.endWithinMs - (performance.now() - started));
    if (!(await turns.take(leftMs() - timeoutMs))) {
      return {
        status: null,
        error: `not sent: every connection to ${url.origin} stayed busy`,
        permanent: false,
        durationMs: 0,
        bodyExcerpt: '',
        busy: true,
      };
    }
    try {
      const first = await exchange(pool, url, target, token);
      if (first.status !== 401 || oauth2 === undefined) return first;
      // The token may have been revoked or rotated before it expired: one new token, one more try.
      // Only if both still fit in what is left of the lease; otherwise the next attempt fetches it.
      if (leftMs() < 2 * timeoutMs) {
        tokens.forget(oauth2, token!);
        return { ...first, status: null, error: 'answered 401 to the access token; a new token is fetched for the next attempt' };
      }
      let renewed: string;
      try {
        renewed = await tokens.renewed(oauth2, token!);
      } catch (error) {
        return tokenFailure(error);
      }
      const second = await exchange(pool, url, target, renewed);
      return { ...second, durationMs: first.durationMs + second.durationMs };
    } finally {
      turns.release();
    }
  }

  async function exchange(pool: Dispatcher, url: URL, target: TargetRequest, token: string | undefined): Promise<TargetResponse> {
    const started = performance.now();
    const elapsedMs = () => Math.round(performance.now() - started);
    const deadline = new ExchangeDeadline(timeoutMs);
    try {
      let response: Dispatcher.ResponseData;
      try {
        response = await pool.request({
          method: 'POST',
          path: `${url.pathname}${url.search}`,
          headers: requestHeaders(target, token, now(), requestOrigin),
          body: target.body,
          signal: deadline.signal,
        });
      } catch (error) {
        return noAnswer(deadline.cause(error), elapsedMs());
      }
      const retryAfterMs = parseRetryAfter(firstValue(response.headers['retry-after']), now());
      const location = response.statusCode >= 300 && response.statusCode <= 399 ? firstValue(response.headers.location) : undefined;
      const answered = {
        status: response.statusCode,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
        ...(location === undefined ? {} : { location: location.slice(0, MAX_LOCATION) }),
      };
      const excerpt = await readExcerpt(response.body, deadline);
      return { ...answered, error: excerpt.error, permanent: false, durationMs: elapsedMs(), bodyExcerpt: excerpt.text };
    } catch (error) {
      return noAnswer(deadline.cause(error), elapsedMs());
    } finally {
      deadline.clear();
    }
  }

  async function close(): Promise<void> {
    closed = true;
    await Promise.all([...pools.values()].map((pool) => pool.close()));
    pools.clear();
    await Promise.all([tokens.close(), dispatchers.close()]);
  }

  return { post, close };
}

function oauth2Of(target: TargetRequest): ClientCredentials | undefined {
  return 'type' in target.auth && target.auth.type === 'oauth2' ? target.auth.oauth2 : undefined;
}

function mtlsOf(target: TargetRequest): ClientTls | undefined {
  return 'type' in target.auth && target.auth.type === 'mtls' ? target.auth.mtls : undefined;
}

/** No token, so nothing sent: the attempt fails with what the token endpoint said. */
function tokenFailure(error: unknown): TargetResponse {
  if (!(error instanceof TokenEndpointError)) throw error;
  return { status: null, error: error.message, permanent: error.permanent, durationMs: 0, bodyExcerpt: '' };
}

const MAX_TIMER_MS = 2 ** 31 - 1;
const MAX_LOCATION = 512;

/** Lets `size` holders go at once; the others wait, first come first served. */
class Turns {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(size: number) {
    this.free = size;
  }

  /** Resolves true with a turn taken, or false when none came free within `waitMs`. */
  take(waitMs: number): Promise<boolean> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve(true);
    }
    if (waitMs <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const granted = () => {
        clearTimeout(timer);
        resolve(true);
      };
      // setTimeout fires at once past 2^31 - 1 ms (Infinity included): longer is forever.
      const timer =
        waitMs <= MAX_TIMER_MS
          ? setTimeout(() => {
              this.waiting.splice(this.waiting.indexOf(granted), 1);
              resolve(false);
            }, waitMs)
          : undefined;
      this.waiting.push(granted);
    });
  }

  /** Hands the turn to the longest waiting, if any. */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** Throws TargetUrlError or TargetDeniedError: both permanent. */
function requestHeaders(
  target: TargetRequest,
  token: string | undefined,
  nowMs: number,
  requestOrigin: string | undefined,
): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': CONTENT_TYPE };
  if (requestOrigin !== undefined) headers['webhook-request-origin'] = requestOrigin;
  const authorization = authorizationHeader(target.auth, token);
  if (authorization !== undefined) headers.authorization = authorization;
  if (target.signing !== undefined) Object.assign(headers, signatureHeaders(target.signing, Math.floor(nowMs / 1000), target.body));
  if (target.traceparent !== undefined) headers.traceparent = target.traceparent;
  return headers;
}

function firstValue(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header;
}

/** Keeps the first 1 KiB and drains the rest, so the connection returns to the pool. */
function noAnswer(error: unknown, durationMs: number): TargetResponse {
  const failure = describeNetworkError(error);
  return { status: null, error: failure.message, permanent: failure.permanent, durationMs, bodyExcerpt: '' };
}

async function readExcerpt(
  body: Dispatcher.ResponseData['body'],
  deadline: ExchangeDeadline,
): Promise<{ text: string; error: string | null }> {
  const decoder = new TextDecoder();
  let text = '';
  let kept = 0;
  let seen = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (kept < EXCERPT_BYTES) {
        const part = chunk.subarray(0, EXCERPT_BYTES - kept);
        text += decoder.decode(part, { stream: true });
        kept += part.length;
      }
      seen += chunk.length;
      if (seen > DRAIN_LIMIT_BYTES) break; // leaving the loop destroys the body and its connection
    }
    return { text, error: null };
  } catch (error) {
    return { text, error: describeNetworkError(deadline.cause(error)).message };
  }
}
