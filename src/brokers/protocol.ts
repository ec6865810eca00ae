/**
 * What a message broker protocol is to the service: how its target URLs read (checked when a
 * subscription is written, and again when it is delivered), and how to publish to it (in the
 * outbound thread, by delivery/broker-publisher.ts, which keeps the connections). One module per
 * protocol implements it (amqp.ts); its entry among the destination kinds (destinations/kinds.ts)
 * makes target URLs of its scheme use it.
 *
 * A protocol's client library is imported inside `connect`, so that only the outbound thread,
 * which publishes, loads it; subscription checks on the main thread read URLs only.
 */

/** What a protocol's URL names beyond its host and port. */
export interface BrokerUrlParts {
  /**
   * What a connection is opened for besides host, port and credentials (AMQP: the virtual host;
   * '' when the protocol has nothing of the kind): publishes with the same share a connection.
   */
  readonly scope: string;
  /** Where each message goes on that connection (AMQP: exchange and routing key), as `publish` takes it. */
  readonly route: BrokerRoute;
}

export type BrokerRoute = Readonly<Record<string, string>>;

/** Where to connect: decided by the publisher, after the address guard. */
export interface BrokerEndpoint {
  /** An IP address the address guard permits (the URL's host, resolved). */
  readonly address: string;
  /** The URL's host as written (brackets of an IPv6 literal removed): for TLS server names and messages. */
  readonly hostname: string;
  readonly port: number;
  readonly scope: string;
  /** From the subscription's `auth` `basic`; absent: none (the protocol's default, if it has one). */
  readonly username?: string;
  readonly password?: string;
}

/** One message, in the protocol's CloudEvents binding, structured mode. */
export interface BrokerMessage {
  /** The delivery's uuid (the same on every attempt): the message id where the protocol has one. */
  readonly id: string;
  /** The event JSON, exactly as sent over HTTP. */
  readonly body: string;
  readonly contentType: string;
  /** The Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature), and `traceparent` when tracing. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface BrokerConnection {
  /**
   * Resolves once the broker has taken the message for good (a publisher confirm, a stream's
   * acknowledgement, PUBACK, an entry id). Rejects with BrokerRefusedError when it never will
   * (trying again would fail the same way), with anything else when it may later; in either case
   * the message may not have been taken. Need not time out: the publisher bounds it.
   */
  publish(route: BrokerRoute, message: BrokerMessage): Promise<void>;
  /** Closes the connection; publishes in flight reject. */
  close(): Promise<void>;
  /** Called once when the connection has closed, whoever closed it (the broker restarting, a network cut, `close`). */
  onClose(listener: () => void): void;
}

export interface BrokerProtocol {
  /** The URL scheme, without the colon: `amqp`. */
  readonly scheme: string;
  readonly defaultPort: number;
  /** The example the messages give: `amqp://host[:port]/[vhost]?exchange=X&routing_key=K`. */
  readonly form: string;
  /**
   * The URL's path and query, checked (host, port, credentials and fragment are checked for every
   * protocol by broker-url.ts). Throws BrokerUrlError saying what is wrong.
   */
  read(url: URL): BrokerUrlParts;
  /** Opens a connection; rejects as `publish` does (a refused login is a BrokerRefusedError). */
  connect(endpoint: BrokerEndpoint, timeoutMs: number): Promise<BrokerConnection>;
}

/** The broker said no, and would say it again: bad credentials, no such exchange or stream, a message too large. */
export class BrokerRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrokerRefusedError';
  }
}

/** A broker target URL that cannot be used: the message says why, for `body.target_url: …`. */
export class BrokerUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrokerUrlError';
  }
}
