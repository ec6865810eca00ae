/**
 * The broker protocols target URLs may name, by scheme: a new protocol is one module
 * implementing BrokerProtocol (protocol.ts), listed here.
 */
import { amqp } from './amqp.js';
import { mqtt } from './mqtt.js';
import { nats } from './nats.js';
import type { BrokerProtocol } from './protocol.js';
import { redis } from './redis.js';

export const BROKER_PROTOCOLS: ReadonlyMap<string, BrokerProtocol> = new Map(
  [amqp, mqtt, nats, redis].map((protocol) => [protocol.scheme, protocol]),
);
