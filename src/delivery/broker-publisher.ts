/**
 * Publishing to message brokers, in the outbound thread (next to the HTTP target client): the
 * broker counterpart of target-client.ts. Each publish is one attempt, answered with whether the
 * broker took the message for good (its confirmation), and otherwise why not and whether trying
 * again could help.
 *
 * - One connection per destination: protocol, broker address, port, the protocol's scope (AMQP:
 *   the virtual host) and credentials. It is opened by the first publish, shared by every
 *   publish to it, closed after IDLE_CLOSE_MS without one, and forgotten when it closes (a broker
 *   restart, a cut connection): the next publish opens a new one.
 * - The broker's host is resolved through the address guard before connecting
 *   (NOTIFICATIONS_TARGET_ALLOW and _DENY judge the address connected to, as for HTTP), and the
 *   protocol is given that address.
 * - A publish, connecting included, takes at most `timeoutMs` (NOTIFICATIONS_TARGET_TIMEOUT). One
 *   that got no confirmation in time closes its connection: a broker that stopped answering on
 *   it (a half-open connection, a hung node) is reached again on a new one.
 */
import { type BrokerConnection, BrokerRefusedError } from '../brokers/protocol.js';
import type { BrokerUrl } from '../brokers/broker-url.js';
import { readBrokerTarget } from '../destinations/target-url.js';
import type { AddressGuard } from '../net/address-guard.js';
import { describeNetworkError } from '../net/network-error.js';
import type { Auth } from '../subscriptions/input.js';
import { within } from '../time/within.js';
import { type Signing, signatureHeaders } from './signature.js';

export interface BrokerRequest {
  readonly url: string;
  /** `basic`: the broker's user name and password; `{}`: none (the protocol's default). */
  readonly auth: Auth;
  /** The event, already serialized as structured-mode CloudEvents JSON. */
  readonly body: string;
  readonly contentType: string;
  /** Signed right before it is published, as an HTTP delivery is, so each attempt has its own timestamp. */
  readonly signing: Signing;
  /** The delivery attempt's span (W3C trace context): a `traceparent` message header, as HTTP sends the header. */
  readonly traceparent?: string;
}

/** One try: `error` null when the broker confirmed the message. */
export interface BrokerAnswer {
  error: string | null;
  /** Trying again would fail the same way: refused by the broker, a denied address, an unusable URL or `auth`. */
  permanent: boolean;
  durationMs: number;
}

export interface BrokerClient {
  /** Never rejects for broker or network problems: they come back as `error`. */
  publish(request: BrokerRequest): Promise<BrokerAnswer>;
  /** Closes every connection. */
  close(): Promise<void>;
}

export interface BrokerPublisherOptions {
  /** A whole publish, connecting included. */
  readonly timeoutMs: number;
  readonly guard: AddressGuard;
  /** The clock signature timestamps are taken from; Date.now unless testing. */
  readonly now?: () => number;
  readonly idleCloseMs?: number;
}

/** A connection nothing was published on for this long is closed. */
export const IDLE_CLOSE_MS = 5 * 60_000;

interface Held {
  readonly opening: Promise<BrokerConnection>;
  inFlight: number;
  idle?: NodeJS.Timeout;
}

class BrokerTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrokerTimeoutError';
  }
}

export function createBrokerPublisher(options: BrokerPublisherOptions): BrokerClient {
  const { timeoutMs, guard, now = Date.now, idleCloseMs = IDLE_CLOSE_MS } = options;
  const connections = new Map<string, Held>();
  let closed = false;

  async function publish(request: BrokerRequest): Promise<BrokerAnswer> {
    if (closed) throw new Error('the broker publisher is closed');
    const started = performance.now();
    const elapsedMs = () => Math.round(performance.now() - started);
    let target: BrokerUrl;
    let credentials: { username?: string; password?: string };
    try {
      target = readBrokerTarget(request.url);
    } catch (error) {
      return { error: `target URL is not usable: ${(error as Error).message}`, permanent: true, durationMs: 0 };
    }
    try {
      credentials = credentialsOf(request.auth, target);
    } catch (error) {
      return { error: `not sent: ${(error as Error).message}`, permanent: true, durationMs: 0 };
    }
    const { body, signing } = request;
    const message = {
      id: signing.id,
      body,
      contentType: request.contentType,
      headers: {
        ...signatureHeaders(signing, Math.floor(now() / 1000), body),
        ...(request.traceparent === undefined ? {} : { traceparent: request.traceparent }),
      },
    };
    const key = [target.lane, target.scope, credentials.username ?? '', credentials.password ?? ''].join('\u0000');
    const held = hold(key, target, credentials);
    try {
      const connection = await within(
        held.opening,
        timeoutMs,
        () => new BrokerTimeoutError(`time-out after ${timeoutMs} ms connecting to ${target.lane}`),
      );
      try {
        await within(
          connection.publish(target.route, message),
          Math.max(0, timeoutMs - elapsedMs()),
          () => new BrokerTimeoutError(`time-out after ${timeoutMs} ms: the broker did not confirm the message`),
        );
      } catch (error) {
        if (error instanceof BrokerTimeoutError) discard(key, held, connection);
        throw error;
      }
      return { error: null, permanent: false, durationMs: elapsedMs() };
    } catch (error) {
      if (error instanceof BrokerRefusedError) return { error: error.message, permanent: true, durationMs: elapsedMs() };
      const failure = describeNetworkError(error);
      return { error: failure.message, permanent: failure.permanent, durationMs: elapsedMs() };
    } finally {
      release(key, held);
    }
  }

  /** The destination's connection, opening it if there is none, counted as in use until `release`. */
  function hold(key: string, target: BrokerUrl, credentials: { username?: string; password?: string }): Held {
    let held = connections.get(key);
    if (held === undefined) {
      const opening = open(target, credentials);
      const entry: Held = { opening, inFlight: 0 };
      connections.set(key, entry);
      opening.then(
        (connection) => connection.onClose(() => forget(key, entry)),
        () => forget(key, entry),
      );
      held = entry;
    }
    held.inFlight++;
    clearTimeout(held.idle);
    return held;
  }

  function release(key: string, held: Held): void {
    held.inFlight--;
    if (held.inFlight > 0 || connections.get(key) !== held) return;
    held.idle = setTimeout(() => {
      if (held.inFlight === 0) discard(key, held);
    }, idleCloseMs);
    held.idle.unref();
  }

  async function open(target: BrokerUrl, credentials: { username?: string; password?: string }): Promise<BrokerConnection> {
    const address = await permittedAddress(guard, target.hostname);
    return target.protocol.connect(
      { address, hostname: target.hostname, port: target.port, scope: target.scope, ...credentials },
      timeoutMs,
    );
  }

  function forget(key: string, held: Held): void {
    clearTimeout(held.idle);
    if (connections.get(key) === held) connections.delete(key);
  }

  /** Closes a connection and forgets it: the next publish opens another. */
  function discard(key: string, held: Held, connection?: BrokerConnection): void {
    forget(key, held);
    if (connection !== undefined) void connection.close();
    else held.opening.then((opened) => opened.close()).catch(() => undefined);
  }

  async function close(): Promise<void> {
    closed = true;
    const all = [...connections.values()];
    connections.clear();
    await Promise.all(
      all.map(async (held) => {
        clearTimeout(held.idle);
        const connection = await held.opening.catch(() => undefined);
        await connection?.close();
      }),
    );
  }

  return { publish, close };
}

/** `basic` is the broker's user name and password; `header` has no meaning to a broker (refused when the subscription is written). */
function credentialsOf(auth: Auth, target: BrokerUrl): { username?: string; password?: string } {
  if (!('type' in auth)) return {};
  if (auth.type === 'basic') return { username: auth.basic.username, password: auth.basic.password };
  throw new Error(`auth of type "${auth.type}" cannot be used with ${target.protocol.scheme}: only basic (user name and password)`);
}

/** The first address of `hostname` the guard permits (a TargetDeniedError when none is). */
function permittedAddress(guard: AddressGuard, hostname: string): Promise<string> {
  return new Promise((resolve, reject) => {
    guard.lookup(hostname, {}, (error, address) => (error ? reject(error) : resolve(address as string)));
  });
}
