/**
 * The shared Mosquitto on 127.0.0.1:1883 (anonymous), as a test uses it: a topic of its own,
 * named with a random suffix, subscribed at QoS 1 by a real MQTT 5 client before anything is
 * published to it, unsubscribed when the test ends. Nothing is retained. The broker itself is
 * never stopped or restarted. Where it does not answer, the tests declared with
 * `{ skip: MOSQUITTO_SKIP }` are reported as skipped with the reason. The same topic can be had
 * on a Mosquitto of the test's own that asks for a password (password-brokers.ts), subscribed by a
 * client logged in with it.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { connectAsync, type IPublishPacket } from 'mqtt';
import { brokerSkip, mustAnswer } from './broker-available.js';
import { eventually } from './http-stub.js';
import type { PasswordBroker } from './password-brokers.js';

export const MOSQUITTO_PORT = 1883;

/** Why the tests that need Mosquitto cannot run here; false when they can. */
/**
 * MQTT 3.1.1's CONNECT: clean session, no keep-alive, an empty client id (the broker makes one,
 * so that probes at once do not take each other's session). Its answer is a CONNACK.
 */
export const MQTT_HELLO = Buffer.from([0x10, 12, 0, 4, ...Buffer.from('MQTT'), 4, 0x02, 0, 0, 0, 0]);

export const MOSQUITTO_SKIP = await brokerSkip({
  name: 'Mosquitto',
  port: MOSQUITTO_PORT,
  hello: MQTT_HELLO,
  answer: Buffer.from([0x20]),
  provide: 'apt-get install mosquitto; mosquitto -d -c /etc/mosquitto/mosquitto.conf',
});

export interface ReceivedMessage {
  readonly payload: Buffer;
  readonly packet: IPublishPacket;
}

export interface TestTopic {
  readonly name: string;
  /** What the subscriber has received so far, in order. */
  readonly messages: ReceivedMessage[];
  /** Waits until at least `count` messages have arrived. */
  received(count: number, timeoutMs?: number): Promise<void>;
}

/** A topic of the test's own, subscribed at QoS 1 from now on: on the shared broker, or on `broker` (one of the test's own), logged in with its user and password. */
export async function mqttTopic(t: TestContext, broker?: PasswordBroker): Promise<TestTopic> {
  if (broker === undefined) mustAnswer(MOSQUITTO_SKIP, 'MOSQUITTO_SKIP');
  const name = `svc-notifications-test/${randomBytes(6).toString('hex')}`;
  const client = await connectAsync({
    host: '127.0.0.1',
    port: broker?.port ?? MOSQUITTO_PORT,
    protocolVersion: 5,
    reconnectPeriod: 0,
    ...(broker === undefined ? {} : { username: broker.username, password: broker.password }),
  });
  const messages: ReceivedMessage[] = [];
  client.on('message', (topic, payload, packet) => {
    if (topic === name) messages.push({ payload, packet });
  });
  await client.subscribeAsync(name, { qos: 1 });
  const cleanup = async () => {
    await client.unsubscribeAsync(name);
    await client.endAsync();
  };
  if (broker === undefined) t.after(cleanup);
  else broker.whenStopping(cleanup);
  return {
    name,
    messages,
    received: (count, timeoutMs = 15_000) => eventually(() => messages.length >= count, `${count} messages on ${name}`, timeoutMs),
  };
}
