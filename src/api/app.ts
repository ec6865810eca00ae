/**
 * The Fastify application: logging with request ids and no secrets, the body limit, the one
 * error handler, OpenAPI generated from the route schemas, and the routes given to it.
 */
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import { errorBody } from '../errors.js';
import { handleError } from './error-handler.js';

export interface AppOptions {
  maxBodyBytes: number;
  logLevel: string;
  version: string;
}

/** Everything a log line must never show. */
const REDACTED = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.body.auth',
  'res.headers["set-cookie"]',
];

export async function buildApp(options: AppOptions, routes: Array<(app: FastifyInstance) => Promise<void> | void>): Promise<FastifyInstance> {
  const app = Fastify({
    logger: { level: options.logLevel, redact: { paths: REDACTED, censor: '[redacted]' } },
    bodyLimit: options.maxBodyBytes,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    // Unknown fields are errors, not silently dropped; numbers are not coerced from strings.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    return503OnClosing: true,
  });
  app.addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send(errorBody(404, `no such route: ${request.method} ${request.url.split('?')[0]}`));
  });
  await app.register(swagger, {
    openapi: {
      info: { title: 'svc-notifications', version: options.version, description: 'Event notification router' },
    },
  });
  for (const register of routes) await register(app);
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
