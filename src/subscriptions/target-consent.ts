/**
 * The consent handshake of the CloudEvents HTTP Web Hooks specification (section 4, abuse
 * protection): before a target is stored, it is sent `OPTIONS` with `WebHook-Request-Origin`
 * and `WebHook-Request-Rate`, and must answer 2xx with `WebHook-Allowed-Origin` equal to our
 * origin or `*`. Whatever else it does (another status, no header, another origin, no answer in
 * time) is a refusal, which the API answers 400. Consent by callback (`WebHook-Request-Callback`)
 * is not offered: a subscription is stored only once its target has said yes.
 */
import { type Dispatcher, request } from 'undici';
import { ServiceError, serviceError } from '../errors.js';
import { type AddressGuard, literalRefusal } from '../net/address-guard.js';
import { type EgressSettings, NO_EGRESS_PROXY } from '../net/egress-proxy.js';
import { describeNetworkError, ExchangeTimeoutError } from '../net/network-error.js';
import { TokenEndpointError, tokenEndpointClient } from '../net/oauth2-token-endpoint.js';
import { type OutboundDispatchers, outboundDispatchers } from '../net/outbound-dispatcher.js';
import { authorizationHeader } from './authorization.js';
import { type Auth, RATE_LIMIT_MAX } from './input.js';

export interface ConsentRequest {
  readonly targetUrl: string;
  readonly auth: Auth;
  /** The subscription's `rate_limit` (per second), asked for per minute; null: the most a subscription may have. */
  readonly ratePerSecond: number | null;
}

export interface Consent {
  /** WebHook-Allowed-Rate: deliveries per minute the target allows; null: `*` or absent, no cap. */
  readonly allowedPerMinute: number | null;
}

export interface TargetConsentOptions {
  /** WebHook-Request-Origin: NOTIFICATIONS_ORIGIN, or this host's name. */
  readonly origin: string;
  /** The whole exchange, connecting included (NOTIFICATIONS_TARGET_TIMEOUT). */
  readonly timeoutMs: number;
  /** Applied to the handshake as to deliveries: a denied address is never connected to. */
  readonly guard: AddressGuard;
  /** The egress proxy of deliveries, which the handshake goes through as they do; none unless given. */
  readonly egress?: EgressSettings;
}

export interface TargetConsent {
  /** Asks a target for consent; resolves with it, or rejects with TARGET_CONSENT_REFUSED (or TARGET_DENIED). */
  ask(request: ConsentRequest): Promise<Consent>;
  /** The longest an `ask` takes. */
  readonly timeoutMs: number;
}

export function targetConsent(options: TargetConsentOptions): TargetConsent {
  const ask = async ({ targetUrl, auth, ratePerSecond }: ConsentRequest): Promise<Consent> => {
    const url = new URL(targetUrl);
    const refusal = literalRefusal(url, options.guard);
    if (refusal !== null) throw serviceError('TARGET_DENIED', refusal);
    const dispatchers = outboundDispatchers({
      timeoutMs: options.timeoutMs,
      guard: options.guard,
      egress: options.egress ?? NO_EGRESS_PROXY,
    });
    try {
      const headers: Record<string, string> = {
        'webhook-request-origin': options.origin,
        'webhook-request-rate': String((ratePerSecond ?? RATE_LIMIT_MAX) * 60),
      };
      const authorization = authorizationHeader(auth, await accessToken(auth, options, dispatchers));
      if (authorization !== undefined) headers.authorization = authorization;
      const tls = 'type' in auth && auth.type === 'mtls' ? { tls: auth.mtls } : {};
      return await optionsExchange(url, headers, dispatchers.outboundDispatcher({ origin: url.origin, ...tls }), options);
    } finally {
      void dispatchers.close().catch(() => undefined);
    }
  };
  return { ask, timeoutMs: options.timeoutMs };
}

/** The OPTIONS request and what its answer says; `dispatcher` is destroyed after it. */
async function optionsExchange(
  url: URL,
  headers: Record<string, string>,
  dispatcher: Dispatcher,
  options: TargetConsentOptions,
): Promise<Consent> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new ExchangeTimeoutError(options.timeoutMs)), options.timeoutMs);
  try {
    const answer = await request(url, { method: 'OPTIONS', headers, dispatcher, signal: abort.signal });
    // The body says nothing the headers do not; it is read away so the connection can close cleanly.
    await answer.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    return judge(answer.statusCode, answer.headers, options.origin);
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    throw serviceError(
      'TARGET_CONSENT_REFUSED',
      `no answer to OPTIONS ${url.origin}${url.pathname}: ${describeNetworkError(error).message}`,
    );
  } finally {
    clearTimeout(timer);
    void dispatcher.destroy().catch(() => undefined);
  }
}

/** oauth2's token for the OPTIONS, fetched for it alone (the deliveries' tokens are kept in the outbound thread). */
async function accessToken(auth: Auth, options: TargetConsentOptions, dispatchers: OutboundDispatchers): Promise<string | undefined> {
  if (!('type' in auth) || auth.type !== 'oauth2') return undefined;
  const endpoint = tokenEndpointClient({ timeoutMs: options.timeoutMs, guard: options.guard, dispatchers });
  try {
    return (await endpoint.requestToken(auth.oauth2)).accessToken;
  } catch (error) {
    if (error instanceof TokenEndpointError) throw serviceError('TARGET_CONSENT_REFUSED', `no access token to ask with: ${error.message}`);
    throw error;
  } finally {
    void endpoint.close().catch(() => undefined);
  }
}

type Headers = Record<string, string | string[] | undefined>;

function judge(status: number, headers: Headers, origin: string): Consent {
  const allowedOrigin = single(headers['webhook-allowed-origin']);
  if (status < 200 || status > 299) {
    throw serviceError(
      'TARGET_CONSENT_REFUSED',
      `OPTIONS answered ${status}${allowedOrigin === undefined ? '' : ` (WebHook-Allowed-Origin: ${allowedOrigin})`}`,
    );
  }
  if (allowedOrigin === undefined)
    throw serviceError('TARGET_CONSENT_REFUSED', `OPTIONS answered ${status} without WebHook-Allowed-Origin`);
  if (allowedOrigin !== origin && allowedOrigin !== '*') {
    throw serviceError('TARGET_CONSENT_REFUSED', `WebHook-Allowed-Origin is "${allowedOrigin}", not "${origin}" or "*"`);
  }
  return { allowedPerMinute: allowedRate(single(headers['webhook-allowed-rate'])) };
}

/** `*` or absent: no cap; a positive whole number: that many a minute; anything else is no consent. */
function allowedRate(value: string | undefined): number | null {
  if (value === undefined || value === '*') return null;
  if (/^[1-9][0-9]{0,8}$/.test(value)) return Number(value);
  throw serviceError('TARGET_CONSENT_REFUSED', `WebHook-Allowed-Rate is "${value}", not "*" or a positive whole number`);
}

/** What a header value may add to an error message: the target chose it, so it is cut short. */
const SHOWN_CHARACTERS = 200;

/**
 * A header given twice (Node joins most into one value, keeps some as arrays) is taken as given
 * once only if both agree; otherwise its values, joined, which match nothing.
 */
function single(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  const values = (Array.isArray(value) ? value : value.split(',')).map((v) => v.trim());
  const joined = values.every((v) => v === values[0]) ? values[0]! : values.join(', ');
  return joined.length > SHOWN_CHARACTERS ? `${joined.slice(0, SHOWN_CHARACTERS)}…` : joined;
}
