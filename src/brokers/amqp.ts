/**
 * AMQP 0-9-1 (RabbitMQ): `amqp://host[:port]/[vhost]?exchange=X&routing_key=K`, with amqplib.
 *
 * - The path is the virtual host (`/` when absent; `%2F` for a name with a slash), the only
 *   query parameters `exchange` (absent or empty: the default exchange, which routes by queue
 *   name) and `routing_key` (then required: it names the queue). Values are percent-decoded; a
 *   `#` of a topic key is written `%23` (a bare one would start a fragment).
 * - Each message is published persistent (delivery mode 2), mandatory, with `content-type`,
 *   `message-id` (the delivery's uuid) and the webhook headers as AMQP headers, on a confirm
 *   channel: delivered when the broker confirms it (publisher confirms).
 * - Refused for good (BrokerRefusedError): a login or virtual host the broker refuses (403, 530),
 *   an exchange it does not have (404) or may not be written (403), a message it will not take
 *   (406), and a message returned as unroutable (no queue bound for its key: without `mandatory`
 *   the broker would drop it and still confirm).
 * - For later: no connection, a connection closed meanwhile, a nack (the broker could not take it).
 *
 * A connection has one confirm channel per exchange: the broker closes a channel for an error of
 * one publish (no such exchange), which fails every publish in flight on it; apart, a missing
 * exchange fails only the publishes to it.
 */
import type { ChannelModel, ConfirmChannel, Message } from 'amqplib';
import {
  type BrokerConnection,
  type BrokerEndpoint,
  type BrokerMessage,
  type BrokerProtocol,
  BrokerRefusedError,
  type BrokerRoute,
  type BrokerUrlParts,
  BrokerUrlError,
} from './protocol.js';
import { within } from '../time/within.js';

/** AMQP short strings (exchange, routing key, virtual host) are at most 255 bytes. */
const SHORT_STRING_BYTES = 255;
const PARAMETERS = new Set(['exchange', 'routing_key']);
/** The replies that say a publish (or a login) would fail again the same way. */
const REFUSING_REPLIES = new Set([403, 404, 406, 530]);
/** How long closing a connection waits for the broker's close-ok. */
const CLOSE_WAIT_MS = 1_000;

export const amqp: BrokerProtocol = {
  scheme: 'amqp',
  defaultPort: 5672,
  form: 'amqp://host[:port]/[vhost]?exchange=X&routing_key=K',
  read: readAmqpUrl,
  connect: connectAmqp,
};

function readAmqpUrl(url: URL): BrokerUrlParts {
  const path = url.pathname;
  if (path.slice(1).includes('/')) throw new BrokerUrlError('the path is the virtual host: one segment (write a / in its name as %2F)');
  const vhost = path === '' || path === '/' ? '/' : decoded(path.slice(1), 'the virtual host');
  shortString(vhost, 'the virtual host');
  const given = new Map<string, string>();
  for (const part of url.search.slice(1).split('&')) {
    if (part === '') continue;
    const split = part.indexOf('=');
    const name = split < 0 ? part : part.slice(0, split);
    if (!PARAMETERS.has(name)) throw new BrokerUrlError(`unknown query parameter "${name}": only exchange and routing_key are read`);
    if (given.has(name)) throw new BrokerUrlError(`the query parameter ${name} is given twice`);
    given.set(name, decoded(split < 0 ? '' : part.slice(split + 1), name));
  }
  const exchange = given.get('exchange') ?? '';
  const routingKey = given.get('routing_key') ?? '';
  if (exchange === '' && routingKey === '')
    throw new BrokerUrlError('routing_key is required without an exchange: the default exchange routes it to the queue of that name');
  shortString(exchange, 'exchange');
  shortString(routingKey, 'routing_key');
  return { scope: vhost, route: { exchange, routingKey } };
}

function decoded(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new BrokerUrlError(`${what} has a % that does not start an escape of UTF-8`);
  }
}

function shortString(text: string, what: string): void {
  const bytes = Buffer.byteLength(text);
  if (bytes > SHORT_STRING_BYTES) throw new BrokerUrlError(`${what} is at most ${SHORT_STRING_BYTES} bytes (found ${bytes})`);
}

async function connectAmqp(endpoint: BrokerEndpoint, timeoutMs: number): Promise<BrokerConnection> {
  const amqplib = await import('amqplib');
  let model: ChannelModel;
  try {
    model = await amqplib.connect(
      {
        protocol: 'amqp',
        hostname: endpoint.address,
        port: endpoint.port,
        // amqplib unescapes it.
        vhost: encodeURIComponent(endpoint.scope),
        // None given: amqplib logs in as guest, as an AMQP URL without credentials does.
        ...(endpoint.username === undefined ? {} : { username: endpoint.username, password: endpoint.password ?? '' }),
      },
      { timeout: timeoutMs, noDelay: true, clientProperties: { connection_name: 'svc-notifications' } },
    );
  } catch (error) {
    throw refusedLogin(error, endpoint.scope) ?? error;
  }
  return new AmqpConnection(model);
}

/**
 * A login or virtual host the broker refused. amqplib reports the first as "Handshake terminated
 * by server: 403 (…)", the second (RabbitMQ's 530 NOT_ALLOWED, without its text) as a close
 * where the virtual host's opening was expected.
 */
function refusedLogin(error: unknown, vhost: string): BrokerRefusedError | undefined {
  const message = error instanceof Error ? error.message : '';
  if (message.startsWith('Expected ConnectionOpenOk; got <ConnectionClose'))
    return new BrokerRefusedError(
      `the broker refused to open virtual host "${vhost}": it has none of that name, or the user may not use it`,
    );
  const code = /^Handshake terminated by server: (\d+)/.exec(message)?.[1];
  if (code === undefined || !REFUSING_REPLIES.has(Number(code))) return undefined;
  return new BrokerRefusedError(`the broker refused the connection: ${replyText(message)}`);
}

/** What the broker said, out of amqplib's `… 404 (NOT-FOUND) with message "NOT_FOUND - no exchange …"`. */
function replyText(message: string): string {
  return /with message "(.*)"$/s.exec(message)?.[1] ?? message;
}

class AmqpConnection implements BrokerConnection {
  private readonly channels = new Map<string, Promise<ExchangeChannel>>();
  /** Why the connection closed, as amqplib reported it before the close. */
  private failure: Error | undefined;
  private readonly closeListeners: Array<() => void> = [];
  private closed = false;

  constructor(private readonly model: ChannelModel) {
    model.on('error', (error: Error) => (this.failure = error));
    model.on('close', () => {
      this.closed = true;
      for (const listener of this.closeListeners.splice(0)) listener();
    });
  }

  async publish(route: BrokerRoute, message: BrokerMessage): Promise<void> {
    const exchange = route.exchange ?? '';
    const channel = await this.channelFor(exchange);
    await channel.publish(route.routingKey ?? '', message);
  }

  private channelFor(exchange: string): Promise<ExchangeChannel> {
    let channel = this.channels.get(exchange);
    if (channel === undefined) {
      const opening = this.model.createConfirmChannel().then(
        (confirm) =>
          new ExchangeChannel(
            confirm,
            exchange,
            () => this.failure,
            () => this.forget(exchange, opening),
          ),
      );
      opening.catch(() => this.forget(exchange, opening));
      this.channels.set(exchange, (channel = opening));
    }
    return channel;
  }

  private forget(exchange: string, channel: Promise<ExchangeChannel>): void {
    if (this.channels.get(exchange) === channel) this.channels.delete(exchange);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // amqplib waits for the broker's close-ok for ever when the socket died while it asked (a
    // cut connection it had not noticed yet): past a moment, the socket is ended here.
    await within(this.model.close(), CLOSE_WAIT_MS, () => new Error('no close-ok')).catch(() => {
      (this.model.connection as { stream?: { destroy(): void } }).stream?.destroy();
    });
  }

  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }
}

/** A confirm channel publishing to one exchange. */
class ExchangeChannel {
  /** Messages the broker returned as unroutable, by message id, until their confirm comes (it follows the return). */
  private readonly returned = new Map<string, string>();
  /** The broker's reason for closing the channel (404 no such exchange), reported before the close. */
  private failure: (Error & { code?: unknown }) | undefined;

  constructor(
    private readonly channel: ConfirmChannel,
    private readonly exchange: string,
    private readonly connectionFailure: () => Error | undefined,
    onClosed: () => void,
  ) {
    channel.on('error', (error: Error) => (this.failure = error));
    channel.on('close', onClosed);
    channel.on('return', (returned: Message) => {
      const id = returned.properties.messageId as unknown;
      const { replyCode, replyText } = returned.fields as unknown as { replyCode: number; replyText: string };
      if (typeof id === 'string') this.returned.set(id, `${replyCode} ${replyText}`);
    });
  }

  publish(routingKey: string, message: BrokerMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const confirmed = (error: unknown) => {
        const returned = this.returned.get(message.id);
        this.returned.delete(message.id);
        if (error !== null && error !== undefined) reject(this.why(error));
        else if (returned !== undefined)
          reject(new BrokerRefusedError(`the broker could not route the message: ${this.route(routingKey)} (${returned})`));
        else resolve();
      };
      try {
        this.channel.publish(
          this.exchange,
          routingKey,
          Buffer.from(message.body),
          {
            persistent: true,
            mandatory: true,
            contentType: message.contentType,
            messageId: message.id,
            headers: message.headers,
          },
          confirmed,
        );
      } catch (error) {
        // The channel closed before it could be sent.
        reject(this.why(error));
      }
    });
  }

  private route(routingKey: string): string {
    return this.exchange === ''
      ? `no queue is named "${routingKey}" (the default exchange routes by queue name)`
      : `exchange "${this.exchange}" has no queue bound for routing key "${routingKey}"`;
  }

  /** What a failed publish comes to: the broker's refusal, or something that may pass. */
  private why(error: unknown): Error {
    if (error instanceof Error && error.message === 'message nacked') return new Error('the broker did not take the message (nack)');
    const failure = this.failure;
    if (failure !== undefined) {
      const text = replyText(failure.message);
      if (typeof failure.code === 'number' && REFUSING_REPLIES.has(failure.code))
        return new BrokerRefusedError(
          `the broker refused to publish to ${this.exchange === '' ? 'the default exchange' : `exchange "${this.exchange}"`}: ${text}`,
        );
      return new Error(`the broker closed the channel: ${text}`);
    }
    // Closed with its connection: a network error keeps its code (describeNetworkError names it).
    const connection = this.connectionFailure() as (Error & { code?: unknown }) | undefined;
    if (connection !== undefined && typeof connection.code === 'string') return connection;
    if (connection !== undefined) return new Error(`the connection closed: ${replyText(connection.message)}`);
    if (error instanceof Error && error.message === 'channel closed') return new Error('the connection closed');
    return error instanceof Error ? error : new Error(String(error));
  }
}
