/**
 * The shared Mosquitto on 127.0.0.1:1883 (anonymous), as a test uses it: a topic of its own,
 * named with a random suffix, subscribed at QoS 1 by a real MQTT 5 client before anything is
 * published to it, unsubscribed when the test ends. Nothing is retained. The broker itself is
 * never stopped or restarted.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { connectAsync, type IPublishPacket } from 'mqtt';
import { eventually } from './http-stub.js';

export const MOSQUITTO_PORT = 1883;

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

/** A topic of the test's own, subscribed at QoS 1 from now on. */
export async function mqttTopic(t: TestContext): Promise<TestTopic> {
  const name = `svc-notifications-test/${randomBytes(6).toString('hex')}`;
  const client = await connectAsync({ host: '127.0.0.1', port: MOSQUITTO_PORT, protocolVersion: 5, reconnectPeriod: 0 });
  const messages: ReceivedMessage[] = [];
  client.on('message', (topic, payload, packet) => {
    if (topic === name) messages.push({ payload, packet });
  });
  await client.subscribeAsync(name, { qos: 1 });
  t.after(async () => {
    await client.unsubscribeAsync(name);
    await client.endAsync();
  });
  return {
    name,
    messages,
    received: (count, timeoutMs = 15_000) => eventually(() => messages.length >= count, `${count} messages on ${name}`, timeoutMs),
  };
}
