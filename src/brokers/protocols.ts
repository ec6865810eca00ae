/**
 * The broker protocols target URLs may name, by scheme: a new protocol is one module
 * implementing BrokerProtocol (protocol.ts), listed here.
 */
import { amqp } from './amqp.js';
import type { BrokerProtocol } from './protocol.js';
import { redis } from './redis.js';

export const BROKER_PROTOCOLS: ReadonlyMap<string, BrokerProtocol> = new Map([amqp, redis].map((protocol) => [protocol.scheme, protocol]));
