/**
 * The shared RabbitMQ on 127.0.0.1:5672 (guest/guest), as a test uses it: its own queues and
 * exchanges, named with a random suffix, consumed with a real consumer (amqplib) and removed
 * when the test ends. The broker itself is never stopped or restarted. Where it does not answer,
 * the tests declared with `{ skip: RABBITMQ_SKIP }` are reported as skipped with the reason.
 */
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import amqplib, { type ConsumeMessage } from 'amqplib';
import { brokerSkip, mustAnswer } from './broker-available.js';
import { eventually } from './http-stub.js';

export const RABBITMQ_PORT = 5672;

/**
 * Why the tests that need RabbitMQ cannot run here; false when they can. To AMQP 0-9-1's
 * protocol header it answers with a method frame (Connection.Start) on channel 0.
 */
export const RABBITMQ_SKIP = await brokerSkip({
  name: 'RabbitMQ',
  port: RABBITMQ_PORT,
  hello: Buffer.from('AMQP\x00\x00\x09\x01', 'latin1'),
  answer: Buffer.from([1, 0, 0]),
  provide: 'apt-get install rabbitmq-server; rabbitmq-server -detached',
});

export interface TestQueue {
  readonly name: string;
  /** What the consumer has received so far, in order. */
  readonly messages: ConsumeMessage[];
  /** Waits until at least `count` messages have arrived. */
  received(count: number, timeoutMs?: number): Promise<void>;
}

export interface Rabbit {
  /** A queue of its own (exclusive to the test's connection: it goes when the test ends), consumed from now on. */
  queue(): Promise<TestQueue>;
  /** An exchange of its own, deleted when the test ends; `bound` queues get its messages with `routingKey`. */
  exchange(type: 'direct' | 'topic' | 'fanout', bound?: { queue: TestQueue; routingKey: string }): Promise<string>;
  /** A name no queue or exchange has. */
  unusedName(): string;
}

export async function rabbitmq(t: TestContext): Promise<Rabbit> {
  mustAnswer(RABBITMQ_SKIP, 'RABBITMQ_SKIP');
  const connection = await amqplib.connect(`amqp://127.0.0.1:${RABBITMQ_PORT}`);
  const channel = await connection.createChannel();
  const exchanges: string[] = [];
  t.after(async () => {
    for (const exchange of exchanges) await channel.deleteExchange(exchange);
    await connection.close();
  });
  const unusedName = () => `svc-notifications-test-${randomBytes(6).toString('hex')}`;
  return {
    unusedName,
    async queue() {
      const name = unusedName();
      await channel.assertQueue(name, { exclusive: true, durable: false });
      const messages: ConsumeMessage[] = [];
      await channel.consume(name, (message) => void (message && messages.push(message)), { noAck: true });
      return {
        name,
        messages,
        received: (count, timeoutMs = 15_000) => eventually(() => messages.length >= count, `${count} messages in ${name}`, timeoutMs),
      };
    },
    async exchange(type, bound) {
      const name = unusedName();
      await channel.assertExchange(name, type, { durable: false, autoDelete: false });
      exchanges.push(name);
      if (bound !== undefined) await channel.bindQueue(bound.queue.name, name, bound.routingKey);
      return name;
    },
  };
}
