/**
 * `/eventmatch`: subscriptions of the acting user, and trying a JSONPath on an event.
 * Who is asking is settled before anything else (401 before 415, 413 or 400). Bodies are read
 * as strictly as /receive reads JSON, by the same code: `application/json` in UTF-8 (a BOM
 * dropped), without a content coding, nested no deeper than a tried event needs; a duplicated
 * member name keeps its last value, as JSON.parse does at /receive.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unsupportedJsonBody } from '../errors.js';
import { type JsonValue, MAX_DOCUMENT_DEPTH } from '../json.js';
import { parseJsonBody } from '../request-body/json-body.js';
import { parseMediaType, requireUtf8Json } from '../request-body/media-type.js';
import { type Body, parsePage } from '../subscriptions/input.js';
import type { SubscriptionRecord } from '../subscriptions/record.js';
import { type SubscriptionServiceDependencies, subscriptionService } from '../subscriptions/service.js';
import { refuseContentCoding } from './content-coding.js';
import { eventmatchSchemas } from './eventmatch-schemas.js';
import { actingUser, type IdentityOptions } from './identity.js';

export interface EventmatchDependencies extends SubscriptionServiceDependencies {
  identity: IdentityOptions;
}

interface UuidParams {
  uuid: string;
}

/**
 * Bodies nest at most as deeply as /receive accepts an event (MAX_DOCUMENT_DEPTH), except that
 * of `POST /eventmatch/test`, whose event (held to that limit itself) is one level down.
 */
declare module 'fastify' {
  interface FastifyContextConfig {
    bodyDepth?: number;
  }
}
const WRAPPED_EVENT = { bodyDepth: MAX_DOCUMENT_DEPTH + 1 };

export function eventmatchRoutes(deps: EventmatchDependencies) {
  return async (app: FastifyInstance) => {
    await app.register(async (scope) => {
      readJsonBodies(scope);
      routes(scope, deps);
    });
  };
}

/**
 * Bodies of the routes of `scope` are read as the header says: strict UTF-8 JSON, nested no
 * deeper than the route's `bodyDepth`. Fastify's parsers would also take text/plain, turn broken
 * UTF-8 into U+FFFD and accept any nesting. Which bodies get here at all is settled by
 * requireJsonBody, which each route runs on request.
 */
export function readJsonBodies(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer, request.routeOptions.config.bodyDepth ?? MAX_DOCUMENT_DEPTH));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

function routes(app: FastifyInstance, deps: EventmatchDependencies): void {
  const schemas = eventmatchSchemas(deps.identity.header);
  const subscriptions = subscriptionService(deps);
  const user = (request: FastifyRequest) => actingUser(request, deps.identity);
  const authenticated = async (request: FastifyRequest) => void user(request);
  const withJsonBody = { onRequest: [authenticated, requireJsonBody] };
  // A create or a change of target_url may wait for the target's consent before the database.
  const targetWrite = { ...withJsonBody, config: { deadline: { extraMs: deps.targetConsent?.timeoutMs ?? 0 } } };
  // Each write, as written, for whoever debugs; app.ts redacts its `auth`.
  const logged = (request: FastifyRequest, what: string) => (record: SubscriptionRecord) => {
    request.log.debug({ subscription: record }, `subscription ${what}`);
    return record;
  };

  app.post<{ Body: Body }>('/eventmatch', { schema: schemas.create, ...targetWrite }, async (request, reply) => {
    const record = logged(request, 'created')(await subscriptions.create(user(request), request.body));
    return reply.header('location', `/eventmatch/${record.uuid}`).send(record);
  });

  app.get<{ Querystring: Record<string, number> }>('/eventmatch', { schema: schemas.list, onRequest: authenticated }, async (request) =>
    subscriptions.list(user(request), parsePage(request.query)),
  );

  app.get<{ Params: UuidParams }>('/eventmatch/:uuid', { schema: schemas.get, onRequest: authenticated }, async (request) =>
    subscriptions.get(user(request), request.params.uuid),
  );

  app.put<{ Params: UuidParams; Body: Body }>('/eventmatch/:uuid', { schema: schemas.update, ...targetWrite }, async (request) =>
    subscriptions.update(user(request), request.params.uuid, request.body).then(logged(request, 'updated')),
  );

  app.delete<{ Params: UuidParams }>(
    '/eventmatch/:uuid',
    { schema: schemas.remove, onRequest: [authenticated, ignoreEmptyBody, requireJsonBody] },
    async (request) => subscriptions.remove(user(request), request.params.uuid).then(logged(request, 'deleted')),
  );

  // Neither answer nor body is logged: both hold the secret.
  app.get<{ Params: UuidParams }>(
    '/eventmatch/:uuid/secret',
    { schema: schemas.signingSecret, onRequest: authenticated },
    async (request) => subscriptions.signingSecret(user(request), request.params.uuid),
  );

  app.post<{ Params: UuidParams; Body: Body }>(
    '/eventmatch/:uuid/secret/rotate',
    {
      schema: schemas.rotateSigningSecret,
      onRequest: [authenticated, ignoreEmptyBody, requireJsonBody],
      // The body is optional; the schema checks an object.
      preValidation: async (request) => void (request.body ??= {}),
    },
    async (request) => subscriptions.rotateSigningSecret(user(request), request.params.uuid, request.body),
  );

  app.post<{ Body: Body }>('/eventmatch/test', { schema: schemas.tryExpression, ...withJsonBody, config: WRAPPED_EVENT }, async (request) =>
    subscriptions.tryExpression(request.body),
  );

  app.post<{ Params: UuidParams; Body: JsonValue }>(
    '/eventmatch/:uuid/test',
    { schema: schemas.trySubscription, ...withJsonBody },
    async (request) => subscriptions.trySubscription(user(request), request.params.uuid, request.body),
  );
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Many HTTP clients send `Content-Type: application/json` on every request, DELETE included;
 * the empty "JSON" body would be a 400. A request without a body has no type and no coding.
 */
export async function ignoreEmptyBody(request: FastifyRequest): Promise<void> {
  if (hasBody(request)) return;
  delete request.headers['content-type'];
  delete request.headers['content-encoding'];
}

/**
 * Decided before the body is read: `application/json` (any case, parameters allowed, a
 * charset other than UTF-8 refused as /receive refuses it); a body without a type is a 415
 * too, and so is a content coding (content-coding.ts).
 */
export async function requireJsonBody(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  refuseContentCoding(request, reply);
  const header = request.headers['content-type'];
  if (header === undefined) {
    if (hasBody(request)) throw unsupportedJsonBody();
    return;
  }
  const type = parseMediaType(header);
  if (type.essence !== 'application/json') throw unsupportedJsonBody();
  requireUtf8Json(type);
}
