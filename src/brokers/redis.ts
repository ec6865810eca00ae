/**
 * Redis Streams: `redis://host[:port]/KEY`, with ioredis.
 *
 * - The path is the stream's key: one segment, percent-decoded (a key with a slash writes it
 *   %2F); no query. Always database 0: a database number in the path (`/1/KEY`) is not read, as
 *   Redis Cluster has no other, and a two-segment path is refused rather than guessed at.
 * - Each message is `XADD KEY * cloudevent <json> content-type <type>` followed by the webhook
 *   headers as fields of their own name (webhook-id, webhook-timestamp, webhook-signature, and
 *   traceparent when tracing): delivered when Redis answers with the entry id.
 * - Refused for good (BrokerRefusedError): a login Redis refuses (WRONGPASS, NOAUTH), a key
 *   holding another type than a stream (WRONGTYPE), a user the ACL does not let write the key or
 *   run XADD (NOPERM).
 * - For later: no connection, a connection closed meanwhile, anything else Redis answers (OOM,
 *   LOADING, READONLY, MISCONF: states of the server that pass).
 *
 * The client neither queues commands while disconnected nor reconnects: a publish on a closed
 * connection fails at once, and the publisher opens a new connection for the next one.
 */
import type { Redis } from 'ioredis';
import {
  type BrokerConnection,
  type BrokerEndpoint,
  type BrokerMessage,
  type BrokerProtocol,
  BrokerRefusedError,
  type BrokerUrlParts,
  BrokerUrlError,
  type BrokerRoute,
} from './protocol.js';
import { within } from '../time/within.js';

/** The field holding the event JSON. */
export const REDIS_EVENT_FIELD = 'cloudevent';
/** The error prefixes (Redis's error codes) that say a login or a write would fail again the same way. */
const REFUSED_LOGIN = /^(WRONGPASS|NOAUTH|NOPERM)\b/;
const REFUSED_WRITE = /^(WRONGTYPE|NOPERM)\b/;
/** How long closing a connection waits for Redis's answer to QUIT. */
const CLOSE_WAIT_MS = 1_000;

export const redis: BrokerProtocol = {
  scheme: 'redis',
  defaultPort: 6379,
  form: 'redis://host[:port]/KEY',
  read: readRedisUrl,
  connect: connectRedis,
};

function readRedisUrl(url: URL): BrokerUrlParts {
  if (url.search !== '' || url.href.endsWith('?')) throw new BrokerUrlError('takes no query: the path is the stream key');
  const path = url.pathname.slice(1);
  if (path === '') throw new BrokerUrlError('names no stream key: write it as redis://host[:port]/KEY');
  if (path.includes('/'))
    throw new BrokerUrlError('the path is the stream key: one segment (write a / in the key as %2F; the database is always 0)');
  let key: string;
  try {
    key = decodeURIComponent(path);
  } catch {
    throw new BrokerUrlError('the stream key has a % that does not start an escape of UTF-8');
  }
  return { scope: '', route: { key } };
}

async function connectRedis(endpoint: BrokerEndpoint, timeoutMs: number): Promise<BrokerConnection> {
  const { Redis } = await import('ioredis');
  const client = new Redis({
    host: endpoint.address,
    port: endpoint.port,
    // None given: no AUTH (the default user, as a Redis URL without credentials).
    ...(endpoint.username === undefined ? {} : { username: endpoint.username, password: endpoint.password ?? '' }),
    lazyConnect: true,
    connectTimeout: timeoutMs,
    // A down Redis fails each publish at once (later), instead of holding it until it is back.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    autoResendUnfulfilledCommands: false,
    connectionName: 'svc-notifications',
    // `disconnect` (a failed connection, or no answer to QUIT) destroys the socket at once rather
    // than waiting 2 s for the server to close its side.
    disconnectTimeout: 0,
  });
  // ioredis rejects `connect` with "Connection is closed." whatever the cause: the cause is the
  // error reported before (ECONNREFUSED, WRONGPASS). Without a listener, ioredis would log it.
  let failure: Error | undefined;
  client.on('error', (error: Error) => (failure = error));
  try {
    // connectTimeout covers the TCP connection only: a server that accepts and never answers
    // the ready check would hold `connect` for ever.
    await within(client.connect(), timeoutMs, () => new Error(`Redis did not answer within ${timeoutMs} ms of connecting`));
  } catch (error) {
    stop(client);
    const cause = failure ?? error;
    const message = cause instanceof Error ? cause.message : '';
    if (REFUSED_LOGIN.test(message)) throw new BrokerRefusedError(`Redis refused the login: ${message}`);
    throw cause;
  }
  return new RedisConnection(client);
}

class RedisConnection implements BrokerConnection {
  private readonly closeListeners: Array<() => void> = [];
  private closed = false;

  constructor(private readonly client: Redis) {
    // With no reconnection, `end` follows the first close.
    client.once('end', () => {
      this.closed = true;
      for (const listener of this.closeListeners.splice(0)) listener();
    });
  }

  async publish(route: BrokerRoute, message: BrokerMessage): Promise<void> {
    const key = route.key ?? '';
    const fields = [REDIS_EVENT_FIELD, message.body, 'content-type', message.contentType, ...Object.entries(message.headers).flat()];
    try {
      await this.client.xadd(key, '*', ...fields);
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (REFUSED_WRITE.test(text)) throw new BrokerRefusedError(`Redis refused to add to stream "${key}": ${text}`);
      // A network error keeps its code (describeNetworkError names it).
      if (error instanceof Error && typeof (error as { code?: unknown }).code === 'string') throw error;
      throw new Error(text === 'Connection is closed.' ? 'the connection closed' : `Redis did not add the message: ${text}`);
    }
  }

  async close(): Promise<void> {
    if (this.closed || this.client.status === 'end') return;
    await within(this.client.quit(), CLOSE_WAIT_MS, () => new Error('no answer to QUIT')).catch(() => stop(this.client));
  }

  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }
}

/** Ends the client's connection, unless it has ended (disconnecting an ended client leaves a 2 s timer behind). */
function stop(client: Redis): void {
  if (client.status !== 'end') client.disconnect();
}
