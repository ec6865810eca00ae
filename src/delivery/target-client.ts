import { isIP } from 'node:net';
import { Pool, type Dispatcher } from 'undici';
import { TargetDeniedError, type AddressGuard } from './address-guard.js';
import { authorizationHeader, type Auth } from './auth.js';
import { describeNetworkError, ExchangeTimeoutError, TargetUrlError } from './network-error.js';
import { parseRetryAfter } from './retry-schedule.js';

export type { Auth } from './auth.js';

export interface TargetRequest {
  readonly url: string;
  readonly auth: Auth;
  /** The event, already serialized as structured-mode CloudEvents JSON. */
  readonly body: string;
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
  /** The first 1 KiB of the answer body, as UTF-8 (a character cut at the end is dropped). */
  bodyExcerpt: string;
}

export interface TargetClient {
  /** Never rejects for network problems: they come back as `error`. */
  post(target: TargetRequest): Promise<TargetResponse>;
  /** Waits for requests in flight, then closes every connection. */
  close(): Promise<void>;
}

export interface TargetClientOptions {
  /** Covers the whole exchange: connecting, sending, the answer's headers and body. */
  readonly timeoutMs: number;
  /**
   * Connections kept per origin: the delivery runner never has more exchanges with one origin
   * in flight (NOTIFICATIONS_TARGET_CONCURRENCY), so a request never queues behind another here.
   */
  readonly connectionsPerOrigin: number;
  readonly guard: AddressGuard;
  /** The clock that Retry-After dates are measured against; Date.now unless testing. */
  readonly now?: () => number;
}

const CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';
const EXCERPT_BYTES = 1024;
/**
 * An answer body is read to its end so the connection can carry the next request,
 * but only up to 64 KiB: past that, a new connection costs less than reading on.
 */
const DRAIN_LIMIT_BYTES = 64 * 1024;

export function createTargetClient(options: TargetClientOptions): TargetClient {
  const { timeoutMs, connectionsPerOrigin, guard, now = Date.now } = options;
  // One pool per origin: connections are kept alive and reused across deliveries.
  // undici's Pool costs about a tenth of the CPU of fetch per request here.
  const origins = new Map<string, Pool>();
  let closed = false;

  function poolFor(origin: string): Pool {
    let pool = origins.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: connectionsPerOrigin,
        // The guard judges the address each connection is made to, after DNS.
        connect: { lookup: guard.lookup, timeout: timeoutMs },
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      origins.set(origin, pool);
    }
    return pool;
  }

  async function post(target: TargetRequest): Promise<TargetResponse> {
    if (closed) throw new Error('the target client is closed');
    let url: URL;
    try {
      url = checkedUrl(target.url, guard);
    } catch (error) {
      return noAnswer(error, 0);
    }
    return exchange(poolFor(url.origin), url, target);
  }

  async function exchange(pool: Pool, url: URL, target: TargetRequest): Promise<TargetResponse> {
    const started = performance.now();
    const elapsedMs = () => Math.round(performance.now() - started);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new ExchangeTimeoutError(timeoutMs)), timeoutMs);
    try {
      let response: Dispatcher.ResponseData;
      try {
        response = await pool.request({
          method: 'POST',
          path: `${url.pathname}${url.search}`,
          headers: requestHeaders(target.auth),
          body: target.body,
          signal: abort.signal,
        });
      } catch (error) {
        return noAnswer(error, elapsedMs());
      }
      const retryAfterMs = parseRetryAfter(firstValue(response.headers['retry-after']), now());
      const answered = { status: response.statusCode, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
      const excerpt = await readExcerpt(response.body);
      return { ...answered, error: excerpt.error, permanent: false, durationMs: elapsedMs(), bodyExcerpt: excerpt.text };
    } catch (error) {
      return noAnswer(error, elapsedMs());
    } finally {
      clearTimeout(timer);
    }
  }

  async function close(): Promise<void> {
    closed = true;
    await Promise.all([...origins.values()].map((pool) => pool.close()));
    origins.clear();
  }

  return { post, close };
}

/** Throws TargetUrlError or TargetDeniedError: both permanent. */
function checkedUrl(text: string, guard: AddressGuard): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TargetUrlError('not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TargetUrlError(`${url.protocol} is not http: or https:`);
  // Node connects to an IP literal without calling the guard's lookup, so it is judged here.
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const family = isIP(host);
  if (family === 4 || family === 6) {
    const refusal = guard.refusal(host, family);
    if (refusal !== null) throw new TargetDeniedError(refusal);
  }
  return url;
}

function requestHeaders(auth: Auth): Record<string, string> {
  const authorization = authorizationHeader(auth);
  return authorization === undefined ? { 'content-type': CONTENT_TYPE } : { 'content-type': CONTENT_TYPE, authorization };
}

function firstValue(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header;
}

/** Keeps the first 1 KiB and drains the rest, so the connection returns to the pool. */
function noAnswer(error: unknown, durationMs: number): TargetResponse {
  const failure = describeNetworkError(error);
  return { status: null, error: failure.message, permanent: failure.permanent, durationMs, bodyExcerpt: '' };
}

async function readExcerpt(body: Dispatcher.ResponseData['body']): Promise<{ text: string; error: string | null }> {
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
    return { text, error: describeNetworkError(error).message };
  }
}
