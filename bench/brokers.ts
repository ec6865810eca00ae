/**
 * Deliveries per second to a message broker, beside HTTP: the server process (allow-all, no
 * policy service) with twenty subscriptions to every event, all to one destination, events offered
 * evenly at RATE a second for LOAD_S seconds, and the deliveries counted where they arrive until
 * none has come for QUIET_MS. Deliveries/s end to end is what arrived over the time from the
 * first event sent to the last delivery: the backlog's drain included when delivery falls behind.
 *
 * - HTTP: the counting keep-alive target (answers 204 at once).
 * - AMQP: the shared RabbitMQ on 127.0.0.1:5672, a durable queue of the bench's own (persistent
 *   messages are written to disk before the broker confirms them), consumed here; deleted after.
 * - MQTT: the shared Mosquitto on 127.0.0.1:1883 (MQTT 5, QoS 1: delivered on PUBACK), a topic of
 *   the bench's own, subscribed here at QoS 1 before the load.
 * - NATS: the shared NATS server on 127.0.0.1:4222, a JetStream stream of the bench's own (file
 *   storage: written before it acknowledges), read here by an ordered consumer; deleted after.
 * - Redis Streams: the shared Redis on 127.0.0.1:6379, a stream of the bench's own (durable as
 *   the server's persistence settings make it), read here with blocking XREAD; deleted after.
 */
import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { Redis } from 'ioredis';
import { connectAsync } from 'mqtt';
import { connect as connectNats } from 'nats';
import type { RunningServer } from '../test/support/processes.js';
import { startCountingTarget } from './counting-target.js';
import { pacedLoad } from './receive.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

const RATE = 300;
const LOAD_S = 10;
const SUBSCRIPTIONS = 20;
const QUIET_MS = 3_000;
const DRAIN_TIMEOUT_MS = 180_000;
const EVERY_EVENT = "$[?$.source == '/pacifica/metadata/ingest']";

/** Where deliveries are counted as they arrive. */
interface Arrivals {
  readonly targetUrl: string;
  count(): number;
  lastAt(): number;
  close(): Promise<void>;
}

export async function benchBrokers(label: string, databaseUrl: string): Promise<Row[]> {
  return [
    await measure(label, 'HTTP', databaseUrl, httpArrivals),
    await measure(label, 'AMQP (RabbitMQ)', databaseUrl, amqpArrivals),
    await measure(label, 'MQTT (Mosquitto)', databaseUrl, mqttArrivals),
    await measure(label, 'NATS JetStream', databaseUrl, natsArrivals),
    await measure(label, 'Redis Streams', databaseUrl, redisArrivals),
  ];
}

async function measure(label: string, destination: string, databaseUrl: string, arrivals: () => Promise<Arrivals>): Promise<Row> {
  const at = await arrivals();
  const server = await startBenchServer(databaseUrl);
  try {
    const subscriptions: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) subscriptions.push(await subscribe(server, at.targetUrl, i));
    const started = performance.now();
    const answered = await pacedLoad(`${server.url}/receive`, `${label}-${destination}`, LOAD_S, RATE);
    const loadS = (performance.now() - started) / 1000;
    await settle(at);
    const expected = answered.ok * SUBSCRIPTIONS;
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    // A try that failed (a time-out under load) is due again seconds later, and holds back the end.
    const retries = Number(/^notifications_deliveries_total\{outcome="retry"\} (\d+)/m.exec(metrics)?.[1] ?? 0);
    // The next destination is measured on the same database: these must not match its events.
    for (const uuid of subscriptions) await unsubscribe(server, uuid);
    return {
      database: label,
      destination,
      'offered deliveries/s': RATE * SUBSCRIPTIONS,
      'load s': loadS,
      'deliveries/s end to end': at.count() / ((at.lastAt() - started) / 1000),
      'drained s after the load': Math.max(0, (at.lastAt() - started) / 1000 - loadS),
      'tries retried': retries,
      'all delivered': at.count() >= expected ? 'yes' : `${at.count()} of ${expected}`,
    };
  } finally {
    await server.stop();
    await at.close();
  }
}

async function subscribe(server: RunningServer, targetUrl: string, i: number): Promise<string> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'http-remote-user': 'bench' },
    body: JSON.stringify({ name: `every event ${i}`, jsonpath: EVERY_EVENT, target_url: targetUrl }),
  });
  if (response.status !== 200) throw new Error(`creating a subscription: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { uuid: string }).uuid;
}

async function unsubscribe(server: RunningServer, uuid: string): Promise<void> {
  const response = await fetch(`${server.url}/eventmatch/${uuid}`, { method: 'DELETE', headers: { 'http-remote-user': 'bench' } });
  if (response.status !== 200) throw new Error(`deleting a subscription: ${response.status} ${await response.text()}`);
}

/** Until no delivery has arrived for QUIET_MS (or DRAIN_TIMEOUT_MS passed). */
async function settle(at: Arrivals): Promise<void> {
  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  let seen = -1;
  while (performance.now() < deadline) {
    if (at.count() === seen && performance.now() - at.lastAt() >= QUIET_MS) return;
    seen = at.count();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function httpArrivals(): Promise<Arrivals> {
  const target = await startCountingTarget();
  return { targetUrl: target.url, count: () => target.delivered(), lastAt: () => target.lastDeliveryAt(), close: () => target.close() };
}

async function amqpArrivals(): Promise<Arrivals> {
  const connection = await amqplib.connect('amqp://127.0.0.1:5672');
  const channel = await connection.createChannel();
  const queue = `svc-notifications-bench-${randomBytes(6).toString('hex')}`;
  await channel.assertQueue(queue, { durable: true });
  let count = 0;
  let last = 0;
  await channel.consume(
    queue,
    () => {
      count++;
      last = performance.now();
    },
    { noAck: true },
  );
  return {
    targetUrl: `amqp://127.0.0.1:5672/?routing_key=${queue}`,
    count: () => count,
    lastAt: () => last,
    close: async () => {
      await channel.deleteQueue(queue);
      await connection.close();
    },
  };
}

async function mqttArrivals(): Promise<Arrivals> {
  const client = await connectAsync({ host: '127.0.0.1', port: 1883, protocolVersion: 5, reconnectPeriod: 0 });
  const topic = `svc-notifications-bench/${randomBytes(6).toString('hex')}`;
  let count = 0;
  let last = 0;
  client.on('message', () => {
    count++;
    last = performance.now();
  });
  await client.subscribeAsync(topic, { qos: 1 });
  return {
    targetUrl: `mqtt://127.0.0.1:1883/${topic}`,
    count: () => count,
    lastAt: () => last,
    close: async () => {
      await client.unsubscribeAsync(topic);
      await client.endAsync();
    },
  };
}

async function natsArrivals(): Promise<Arrivals> {
  const connection = await connectNats({ servers: '127.0.0.1:4222' });
  const manager = await connection.jetstreamManager();
  const suffix = randomBytes(6).toString('hex');
  const stream = `svc-notifications-bench-${suffix}`;
  await manager.streams.add({ name: stream, subjects: [`svcnbench${suffix}.>`] });
  const messages = await (await connection.jetstream().consumers.get(stream)).consume();
  let count = 0;
  let last = 0;
  void (async () => {
    for await (const _ of messages) {
      count++;
      last = performance.now();
    }
  })();
  return {
    targetUrl: `nats://127.0.0.1:4222/svcnbench${suffix}.events`,
    count: () => count,
    lastAt: () => last,
    close: async () => {
      await messages.close();
      await manager.streams.delete(stream);
      await connection.close();
    },
  };
}

async function redisArrivals(): Promise<Arrivals> {
  const key = `svc-notifications-bench-${randomBytes(6).toString('hex')}`;
  const reader = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  await reader.connect();
  let count = 0;
  let last = 0;
  let reading = true;
  const read = (async () => {
    let from = '0';
    while (reading) {
      const answer = await reader.xread('COUNT', 10_000, 'BLOCK', 200, 'STREAMS', key, from);
      const entries = answer?.[0]?.[1] ?? [];
      if (entries.length === 0) continue;
      count += entries.length;
      last = performance.now();
      from = entries[entries.length - 1]![0];
    }
  })();
  return {
    targetUrl: `redis://127.0.0.1:6379/${key}`,
    count: () => count,
    lastAt: () => last,
    close: async () => {
      reading = false;
      await read;
      await reader.del(key);
      await reader.quit();
    },
  };
}
