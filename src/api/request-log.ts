/**
 * One log line per request, by NOTIFICATIONS_LOG_REQUESTS, instead of Fastify's two ("incoming
 * request", "request completed"): a flood of refused requests once filled a full disk with them.
 */
import { type FastifyInstance, LogController } from 'fastify';
import type { LogRequests } from '../config/settings.js';

/**
 * Fastify's own per-request lines off, as `disableRequestLogging` turns them off; its other
 * lines (a response stream or a serializer that failed), which that option would silence too, kept.
 */
export class WithoutRequestLines extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(): void {}
}

export function logRequests(app: FastifyInstance, which: LogRequests): void {
  if (which === 'off') return;
  app.addHook('onResponse', (request, reply, done) => {
    if (which === 'all' || reply.statusCode >= 400) {
      request.log.info(
        {
          method: request.method,
          url: request.url,
          statusCode: reply.statusCode,
          responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
          remoteAddress: request.socket.remoteAddress,
        },
        'request answered',
      );
    }
    done();
  });
}
