/**
 * `/eventmatch`: subscriptions of the acting user, and trying a JSONPath on an event.
 * Who is asking is settled before anything else (401 before 415, 413 or 400), and request
 * bodies must be `application/json`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { JsonValue } from '../jsonpath/index.js';
import { unsupportedJsonBody } from '../errors.js';
import { parsePage, type Body } from '../subscriptions/input.js';
import { subscriptionService, type SubscriptionServiceDependencies } from '../subscriptions/service.js';
import { eventmatchSchemas } from './eventmatch-schemas.js';
import { actingUser, type IdentityOptions } from './identity.js';

export interface EventmatchDependencies extends SubscriptionServiceDependencies {
  identity: IdentityOptions;
}

interface UuidParams {
  uuid: string;
}

export function eventmatchRoutes(deps: EventmatchDependencies) {
  return (app: FastifyInstance) => {
    const schemas = eventmatchSchemas(deps.identity.header);
    const subscriptions = subscriptionService(deps);
    const user = (request: FastifyRequest) => actingUser(request, deps.identity);
    const authenticated = { onRequest: async (request: FastifyRequest) => void user(request) };
    const withJsonBody = { onRequest: [authenticated.onRequest, requireJson] };

    app.post<{ Body: Body }>('/eventmatch', { schema: schemas.create, ...withJsonBody }, async (request, reply) => {
      const record = await subscriptions.create(user(request), request.body);
      return reply.header('location', `/eventmatch/${record.uuid}`).send(record);
    });

    app.get<{ Querystring: Record<string, string> }>('/eventmatch', { schema: schemas.list, ...authenticated }, async (request) =>
      subscriptions.list(user(request), parsePage(request.query)),
    );

    app.get<{ Params: UuidParams }>('/eventmatch/:uuid', { schema: schemas.get, ...authenticated }, async (request) =>
      subscriptions.get(user(request), request.params.uuid),
    );

    app.put<{ Params: UuidParams; Body: Body }>('/eventmatch/:uuid', { schema: schemas.update, ...withJsonBody }, async (request) =>
      subscriptions.update(user(request), request.params.uuid, request.body),
    );

    app.delete<{ Params: UuidParams }>('/eventmatch/:uuid', { schema: schemas.remove, onRequest: [authenticated.onRequest, ignoreEmptyBody] }, async (request) =>
      subscriptions.remove(user(request), request.params.uuid),
    );

    app.post<{ Body: Body }>('/eventmatch/test', { schema: schemas.tryExpression, ...withJsonBody }, async (request) =>
      subscriptions.tryExpression(request.body),
    );

    app.post<{ Params: UuidParams; Body: JsonValue }>('/eventmatch/:uuid/test', { schema: schemas.trySubscription, ...withJsonBody }, async (request) =>
      subscriptions.trySubscription(user(request), request.params.uuid, request.body),
    );
  };
}

/**
 * Many HTTP clients send `Content-Type: application/json` on every request, DELETE included;
 * Fastify would answer 400 to the empty "JSON" body. A request without a body has no type.
 */
async function ignoreEmptyBody(request: FastifyRequest): Promise<void> {
  const length = request.headers['content-length'];
  if (request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')) delete request.headers['content-type'];
}

/**
 * Fastify also parses text/plain, which would reach the schema as a string and be answered
 * 400; a body in the wrong media type is a 415. A request without a body needs no type.
 */
async function requireJson(request: FastifyRequest): Promise<void> {
  const type = request.headers['content-type'];
  if (type === undefined) return;
  const essence = type.split(';')[0]?.trim().toLowerCase();
  if (essence !== 'application/json') {
    throw unsupportedJsonBody();
  }
}
