/**
 * MQTT 5, or 3.1.1 where the broker speaks no 5 (Mosquitto, EMQX, HiveMQ): `mqtt://host[:port]/TOPIC`,
 * with the `mqtt` package.
 *
 * - The path after the first slash is the topic, percent-decoded, its levels separated by `/`
 *   (`mqtt://broker/orders/created` publishes to `orders/created`). It must not be empty, hold a
 *   wildcard (`+`, `#`: a filter for subscribers, not a topic to publish to) or start with `$`
 *   (the broker's own topics). There is no query.
 * - Each message is published QoS 1, not retained; delivered on the broker's PUBACK. MQTT 5 gives
 *   it the content type and the webhook headers as user properties; a 3.1.1 broker gets the body
 *   only (3.1.1 has no properties). A PUBACK "no matching subscribers" is a delivery: the broker
 *   took the message, and MQTT keeps none for subscribers to come.
 * - Refused for good (BrokerRefusedError): a login the broker refuses (bad user name or password,
 *   not authorized) and a PUBACK whose reason says the message will never be taken (not
 *   authorized, topic name invalid, packet too large, quota exceeded, payload format invalid).
 * - For later: no connection, a connection closed before its PUBACK came.
 */
import { randomBytes } from 'node:crypto';
import type { IClientOptions, MqttClient } from 'mqtt';
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

/** A topic is an MQTT string: at most 65535 bytes of UTF-8. */
const TOPIC_BYTES = 65_535;
/** CONNACK codes of a login refused: 3.1.1 (4, 5) and 5 (134 bad user name or password, 135 not authorized, 138 banned, 140 bad authentication method). */
const REFUSED_LOGINS = new Set([4, 5, 134, 135, 138, 140]);
/** CONNACK codes of a broker that speaks no MQTT 5: 3.1.1's "unacceptable protocol version", 5's "unsupported protocol version". */
const NO_MQTT_5 = new Set([1, 132]);
/** PUBACK reasons that would come again: not authorized, topic name invalid, packet too large, quota exceeded, payload format invalid. */
const REFUSED_PUBLISHES = new Set([135, 144, 149, 151, 153]);

export const mqtt: BrokerProtocol = {
  scheme: 'mqtt',
  defaultPort: 1883,
  form: 'mqtt://host[:port]/TOPIC',
  read: readMqttUrl,
  connect: connectMqtt,
};

function readMqttUrl(url: URL): BrokerUrlParts {
  if (url.search !== '') throw new BrokerUrlError('an MQTT URL has no query: the topic is the path');
  let topic: string;
  try {
    topic = decodeURIComponent(url.pathname.slice(1));
  } catch {
    throw new BrokerUrlError('the topic has a % that does not start an escape of UTF-8');
  }
  if (topic === '') throw new BrokerUrlError('names no topic: write it as the path, mqtt://host[:port]/TOPIC');
  if (/[+#]/.test(topic))
    throw new BrokerUrlError(`the topic "${topic}" has a wildcard (+ or #): a message is published to one topic, not a filter`);
  if (topic.startsWith('$')) throw new BrokerUrlError(`the topic "${topic}" starts with $: those are the broker's own topics`);
  if (topic.includes('\u0000')) throw new BrokerUrlError('the topic must not contain a NUL character');
  const bytes = Buffer.byteLength(topic);
  if (bytes > TOPIC_BYTES) throw new BrokerUrlError(`the topic is at most ${TOPIC_BYTES} bytes (found ${bytes})`);
  return { scope: '', route: { topic } };
}

async function connectMqtt(endpoint: BrokerEndpoint, timeoutMs: number): Promise<BrokerConnection> {
  try {
    return await connectAs(5, endpoint, timeoutMs);
  } catch (error) {
    if (!NO_MQTT_5.has(reasonCode(error) ?? -1)) throw error;
    return connectAs(4, endpoint, timeoutMs);
  }
}

async function connectAs(protocolVersion: 4 | 5, endpoint: BrokerEndpoint, timeoutMs: number): Promise<MqttConnection> {
  const { connect } = await import('mqtt');
  const options: IClientOptions = {
    host: endpoint.address,
    port: endpoint.port,
    protocol: 'mqtt',
    protocolVersion,
    clientId: `svc-notifications-${randomBytes(8).toString('hex')}`,
    clean: true,
    // The publisher opens a new connection when this one closes; mqtt.js must not reconnect on its own.
    reconnectPeriod: 0,
    connectTimeout: timeoutMs,
    ...(endpoint.username === undefined ? {} : { username: endpoint.username, password: endpoint.password ?? '' }),
  };
  const client = connect(options);
  await new Promise<void>((resolve, reject) => {
    const fail = (error: Error) => {
      client.removeListener('connect', connected);
      client.removeListener('error', fail);
      client.removeListener('close', closed);
      // Late errors of the socket being ended are of no interest.
      client.on('error', () => undefined);
      client.end(true);
      reject(refusedLogin(error) ?? error);
    };
    const connected = () => {
      client.removeListener('error', fail);
      client.removeListener('close', closed);
      resolve();
    };
    const closed = () => fail(new Error('the connection closed before the broker accepted it'));
    client.once('connect', connected);
    client.once('error', fail);
    client.once('close', closed);
  });
  return new MqttConnection(client, protocolVersion);
}

function reasonCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

function refusedLogin(error: Error): BrokerRefusedError | undefined {
  const code = reasonCode(error);
  if (code === undefined || !REFUSED_LOGINS.has(code)) return undefined;
  return new BrokerRefusedError(`the broker refused the connection: ${error.message.replace(/^Connection refused: /, '')} (${code})`);
}

class MqttConnection implements BrokerConnection {
  /** Publishes awaiting their PUBACK: mqtt.js keeps QoS 1 messages for a reconnect that never comes here. */
  private readonly pending = new Set<(error: Error) => void>();
  private readonly closeListeners: Array<() => void> = [];
  private failure: Error | undefined;
  private closed = false;

  constructor(
    private readonly client: MqttClient,
    private readonly protocolVersion: 4 | 5,
  ) {
    client.on('error', (error) => (this.failure = error));
    client.on('close', () => {
      if (this.closed) return;
      this.closed = true;
      const failure = this.failure as (Error & { code?: unknown }) | undefined;
      // A network error keeps its code (describeNetworkError names it).
      const why = failure !== undefined && typeof failure.code === 'string' ? failure : new Error('the connection closed');
      for (const reject of [...this.pending]) reject(why);
      this.pending.clear();
      if (!client.disconnecting) client.end(true);
      for (const listener of this.closeListeners.splice(0)) listener();
    });
  }

  publish(route: BrokerRoute, message: BrokerMessage): Promise<void> {
    const topic = route.topic ?? '';
    if (this.closed) return Promise.reject(new Error('the connection closed'));
    return new Promise((resolve, reject) => {
      const settle = (error: Error | undefined) => {
        if (!this.pending.delete(fail)) return;
        if (error === undefined) resolve();
        else reject(this.why(error, topic));
      };
      const fail = (error: Error) => {
        this.pending.delete(fail);
        reject(error);
      };
      this.pending.add(fail);
      this.client.publish(
        topic,
        Buffer.from(message.body),
        {
          qos: 1,
          retain: false,
          ...(this.protocolVersion === 5
            ? { properties: { contentType: message.contentType, payloadFormatIndicator: true, userProperties: { ...message.headers } } }
            : {}),
        },
        (error) => settle(error ?? undefined),
      );
    });
  }

  private why(error: Error, topic: string): Error {
    const code = reasonCode(error);
    if (code !== undefined && REFUSED_PUBLISHES.has(code))
      return new BrokerRefusedError(
        `the broker refused to publish to topic "${topic}": ${error.message.replace(/^Publish error: /, '')} (${code})`,
      );
    return error;
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.client.end(true, {}, () => resolve()));
  }

  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }
}
