/**
 * Asks an OAuth 2.0 token endpoint for an access token with the client credentials grant
 * (RFC 6749 section 4.4): a form POST of grant_type=client_credentials (and scope, audience),
 * the client authenticated by HTTP Basic with its form-encoded id and secret (section 2.3.1). The
 * endpoint is a user's URL: it is held to the address guard and the time-out targets are.
 * Errors name the endpoint and what it answered, never the secret.
 */
import type { Dispatcher } from 'undici';
import { type AddressGuard, TargetDeniedError } from './address-guard.js';
import { guardedHttpUrl } from './http-url.js';
import { ExchangeDeadline } from './exchange-deadline.js';
import { describeNetworkError } from './network-error.js';
import type { OutboundDispatchers } from './outbound-dispatcher.js';

/** Named as a subscription's `auth.oauth2` names them. */
export interface ClientCredentials {
  readonly token_url: string;
  readonly client_id: string;
  readonly client_secret: string;
  readonly scope?: string;
  readonly audience?: string;
}

export interface IssuedToken {
  readonly accessToken: string;
  /** `expires_in`, in ms; null when the answer did not say. */
  readonly lifetimeMs: number | null;
}

/** The endpoint refused, or gave no token. `permanent`: its address is refused, or its URL unusable. */
export class TokenEndpointError extends Error {
  readonly code = 'ETOKENENDPOINT';
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = 'TokenEndpointError';
  }
}

export interface TokenEndpointClient {
  /** Rejects with a TokenEndpointError only. */
  requestToken(credentials: ClientCredentials): Promise<IssuedToken>;
  close(): Promise<void>;
}

export interface TokenEndpointOptions {
  readonly timeoutMs: number;
  readonly guard: AddressGuard;
  /** Made with `guard`: connections to the endpoint are judged by it, and go through the egress proxy as targets' do. */
  readonly dispatchers: OutboundDispatchers;
}

/** An answer is read up to this much; a token answer is a few hundred bytes. */
const ANSWER_LIMIT_BYTES = 64 * 1024;
/** What an error message quotes of the endpoint's words (`error`, `error_description`, or its body). */
const QUOTED_CHARACTERS = 200;

export function tokenEndpointClient(options: TokenEndpointOptions): TokenEndpointClient {
  const { timeoutMs, guard, dispatchers } = options;
  // One dispatcher per endpoint origin, kept alive: a token is asked for again at every renewal.
  const byOrigin = new Map<string, Dispatcher>();
  const dispatcherFor = (origin: string): Dispatcher => {
    let dispatcher = byOrigin.get(origin);
    if (dispatcher === undefined) byOrigin.set(origin, (dispatcher = dispatchers.outboundDispatcher({ origin })));
    return dispatcher;
  };

  async function requestToken(credentials: ClientCredentials): Promise<IssuedToken> {
    const url = checkedUrl(credentials.token_url, guard);
    const named = `token endpoint ${url.origin}${url.pathname}`;
    const deadline = new ExchangeDeadline(timeoutMs);
    let status: number;
    let text: string;
    try {
      const answer = await dispatcherFor(url.origin).request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: basicClientAuthentication(credentials),
        },
        body: form(credentials),
        signal: deadline.signal,
      });
      status = answer.statusCode;
      text = await readLimited(answer.body as AsyncIterable<Buffer>);
    } catch (error) {
      const failure = describeNetworkError(deadline.cause(error));
      throw new TokenEndpointError(`${named}: ${failure.message}`, failure.permanent);
    } finally {
      deadline.clear();
    }
    return issuedToken(named, status, text);
  }

  let closing: Promise<void> | undefined;
  const close = async () => {
    await Promise.all([...byOrigin.values()].map((dispatcher) => dispatcher.close()));
  };
  return { requestToken, close: () => (closing ??= close()) };
}

function checkedUrl(text: string, guard: AddressGuard): URL {
  try {
    return guardedHttpUrl(text, guard);
  } catch (error) {
    if (error instanceof TargetDeniedError) throw new TokenEndpointError(`token endpoint ${new URL(text).origin}: ${error.message}`, true);
    throw new TokenEndpointError(`token endpoint URL is not usable: ${(error as Error).message}`, true);
  }
}

/** RFC 6749 section 2.3.1: id and secret form-encoded, then joined by a colon, as HTTP Basic. */
function basicClientAuthentication(credentials: ClientCredentials): string {
  const encoded = `${formEncoded(credentials.client_id)}:${formEncoded(credentials.client_secret)}`;
  return `Basic ${Buffer.from(encoded, 'utf8').toString('base64')}`;
}

function formEncoded(value: string): string {
  return new URLSearchParams([['', value]]).toString().slice(1);
}

function form(credentials: ClientCredentials): string {
  const fields = new URLSearchParams({ grant_type: 'client_credentials' });
  if (credentials.scope !== undefined) fields.set('scope', credentials.scope);
  if (credentials.audience !== undefined) fields.set('audience', credentials.audience);
  return fields.toString();
}

async function readLimited(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > ANSWER_LIMIT_BYTES) break; // leaving the loop destroys the body
  }
  return Buffer.concat(chunks).subarray(0, ANSWER_LIMIT_BYTES).toString('utf8');
}

/** RFC 6749 sections 5.1 (a token) and 5.2 (an error); a token type other than bearer is no use here (RFC 6750). */
function issuedToken(named: string, status: number, text: string): IssuedToken {
  const answer = jsonObject(text);
  if (status < 200 || status > 299) {
    const error = typeof answer?.error === 'string' ? answer.error : undefined;
    const description = typeof answer?.error_description === 'string' ? answer.error_description : undefined;
    const words = error === undefined ? quoted(text) : `${quoted(error)}${description === undefined ? '' : ` (${quoted(description)})`}`;
    throw new TokenEndpointError(`${named} answered ${status}${words === '' ? '' : `: ${words}`}`, false);
  }
  if (answer === undefined) throw new TokenEndpointError(`${named} answered ${status} with no JSON object`, false);
  const accessToken = answer.access_token;
  if (typeof accessToken !== 'string' || !/^[\x21-\x7e]+$/.test(accessToken))
    throw new TokenEndpointError(`${named} answered ${status} without an access_token`, false);
  // Required by RFC 6749, yet left out by some endpoints whose tokens are all bearer tokens: absent passes.
  const tokenType = answer.token_type;
  if (tokenType !== undefined && (typeof tokenType !== 'string' || tokenType.toLowerCase() !== 'bearer'))
    throw new TokenEndpointError(`${named} answered token_type ${quoted(JSON.stringify(tokenType))}, not bearer`, false);
  return { accessToken, lifetimeMs: lifetimeOf(answer.expires_in) };
}

/** expires_in in seconds: a number, or (as some endpoints write it) a string of digits; anything else says nothing. */
function lifetimeOf(value: unknown): number | null {
  const seconds = typeof value === 'string' && /^\d{1,10}$/.test(value) ? Number(value) : value;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : null;
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What the endpoint wrote, on one line and cut short. */
function quoted(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what it replaces
  const line = text.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
  return line.length > QUOTED_CHARACTERS ? `${line.slice(0, QUOTED_CHARACTERS)}…` : line;
}
