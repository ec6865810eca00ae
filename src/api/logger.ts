/**
 * The service's logger: JSON lines (pino), made before anything else so that the database,
 * the stages and the HTTP app all log through it, with nothing secret in any line.
 */
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';

/**
 * Everything a log line must never show. `auth` is a subscription's credentials wherever it
 * sits: in the record each write logs at debug level (`subscription.auth`), or in whatever
 * else is logged, up to two levels down.
 */
const REDACTED = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'auth',
  '*.auth',
  '*.*.auth',
  // Signing secrets: the secret routes log neither answer nor body; redacted should one reach a line all the same.
  'secret',
  '*.secret',
  '*.*.secret',
];

export function createLogger(level: string): FastifyBaseLogger {
  return pino({ level, redact: { paths: REDACTED, censor: '[redacted]' } });
}
