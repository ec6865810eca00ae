/**
 * NATS JetStream: `nats://host[:port]/SUBJECT`, with the `nats` client.
 *
 * - The path is the subject, one segment, percent-decoded: dot-separated tokens, none empty, no
 *   white space, no wildcard (`*`, `>`: a message goes to one subject). No query parameters.
 * - Each message is published through JetStream with `Content-Type`, `Nats-Msg-Id` (the
 *   delivery's uuid: the stream drops a repeat within its duplicate window) and the webhook
 *   headers as NATS headers: delivered when a stream acknowledges it.
 * - Refused for good (BrokerRefusedError): a subject no stream holds (no responders, 503), an
 *   error the stream answers (4xx: the message is too large for it, the stream is sealed), a
 *   message larger than the server's max_payload, and a login the server refuses.
 * - For later: no connection, a connection closed meanwhile, no acknowledgement.
 *
 * The client does not reconnect by itself: a closed connection is reported by `onClose`, and the
 * publisher opens a new one for the next publish.
 */
import type { NatsConnection, NatsError } from 'nats';
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

/** A token of a subject: anything but dots, white space and nothing. */
const TOKEN = /^[^.\s]+$/u;

export const nats: BrokerProtocol = {
  scheme: 'nats',
  defaultPort: 4222,
  form: 'nats://host[:port]/SUBJECT',
  read: readNatsUrl,
  connect: connectNats,
};

function readNatsUrl(url: URL): BrokerUrlParts {
  if (url.search !== '') throw new BrokerUrlError('takes no query parameters: the path is the subject');
  const path = url.pathname.slice(1);
  if (path === '') throw new BrokerUrlError('names no subject: write it as the path, nats://host[:port]/SUBJECT');
  if (path.includes('/')) throw new BrokerUrlError('the path is the subject: one segment (tokens are separated by dots)');
  let subject: string;
  try {
    subject = decodeURIComponent(path);
  } catch {
    throw new BrokerUrlError('the subject has a % that does not start an escape of UTF-8');
  }
  for (const token of subject.split('.')) {
    if (!TOKEN.test(token)) throw new BrokerUrlError(`the subject "${subject}" has an empty token or white space`);
    if (token === '*' || token === '>') throw new BrokerUrlError(`the subject "${subject}" has a wildcard: publish to one subject`);
  }
  return { scope: '', route: { subject } };
}

async function connectNats(endpoint: BrokerEndpoint, timeoutMs: number): Promise<BrokerConnection> {
  const client = await import('nats');
  const host = endpoint.address.includes(':') ? `[${endpoint.address}]` : endpoint.address;
  try {
    const connection = await client.connect({
      servers: `${host}:${endpoint.port}`,
      name: 'svc-notifications',
      timeout: timeoutMs,
      reconnect: false,
      ...(endpoint.username === undefined ? {} : { user: endpoint.username, pass: endpoint.password ?? '' }),
    });
    return new NatsBrokerConnection(connection, client.headers, timeoutMs);
  } catch (error) {
    throw refusal(error) ?? connectFailure(error);
  }
}

function codeOf(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : '';
}

/** The server refused the login, or the stream refused the message (and would again). */
function refusal(error: unknown, subject?: string): BrokerRefusedError | undefined {
  const code = codeOf(error);
  if (code === 'AUTHORIZATION_VIOLATION' || code === 'AUTHENTICATION_EXPIRED')
    return new BrokerRefusedError(`the server refused the connection: ${(error as Error).message}`);
  if (subject === undefined) return undefined;
  if (code === '503') return new BrokerRefusedError(`no stream holds subject "${subject}" (no responders)`);
  const api = (error as Partial<NatsError>).api_error;
  if (api !== undefined && api.code >= 400 && api.code < 500)
    return new BrokerRefusedError(`the stream refused the message to "${subject}": ${api.description} (${api.code})`);
  return undefined;
}

/** The client's own codes, in the words (and Node codes) network-error.ts knows. */
function connectFailure(error: unknown): Error {
  const code = codeOf(error);
  if (code === 'CONNECTION_REFUSED') return Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
  if (code === 'TIMEOUT') return new Error('time-out connecting');
  return error instanceof Error ? error : new Error(String(error));
}

function publishFailure(error: unknown): Error {
  const code = codeOf(error);
  if (code === 'CONNECTION_CLOSED' || code === 'DISCONNECT') return new Error('the connection closed');
  if (code === 'TIMEOUT') return new Error('the stream did not acknowledge the message in time');
  return error instanceof Error ? error : new Error(String(error));
}

class NatsBrokerConnection implements BrokerConnection {
  private readonly stream;

  constructor(
    private readonly connection: NatsConnection,
    private readonly headers: typeof import('nats').headers,
    private readonly timeoutMs: number,
  ) {
    this.stream = connection.jetstream();
  }

  async publish(route: BrokerRoute, message: BrokerMessage): Promise<void> {
    const subject = route.subject ?? '';
    const headers = this.headers();
    headers.set('Content-Type', message.contentType);
    for (const [name, value] of Object.entries(message.headers)) headers.set(name, value);
    try {
      await this.stream.publish(subject, Buffer.from(message.body), { msgID: message.id, headers, timeout: this.timeoutMs });
    } catch (error) {
      if (codeOf(error) === 'MAX_PAYLOAD_EXCEEDED')
        throw new BrokerRefusedError(`the message is larger than the server takes (${this.connection.info?.max_payload ?? '?'} bytes)`);
      throw refusal(error, subject) ?? publishFailure(error);
    }
  }

  async close(): Promise<void> {
    if (!this.connection.isClosed()) await this.connection.close();
  }

  onClose(listener: () => void): void {
    void this.connection.closed().then(listener);
  }
}
