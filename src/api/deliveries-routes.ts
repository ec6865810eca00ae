/**
 * `GET /eventmatch/{uuid}/deliveries`: a subscription's delivery history, for its owner
 * (subscriptions/delivery-history.ts says what it holds and who may read it),
 * `GET /eventmatch/{uuid}/deliveries/{elm}/event`: the event one of them is for,
 * `POST /eventmatch/{uuid}/deliveries/{elm}/retry`: one of them queued again, and
 * `POST /eventmatch/{uuid}/deliveries/recover`: those that failed or were cancelled within a
 * window queued again (subscriptions/delivery-retry.ts). Anyone else gets the same 404 as for a
 * missing uuid.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DatabaseHandle } from '../db/connect.js';
import { type DeliveryRecord, deliveryHistory } from '../subscriptions/delivery-history.js';
import { type DeliveryRetryDependencies, deliveryRetry, RECOVER_LIMIT, type RecoverWindow } from '../subscriptions/delivery-retry.js';
import { parsePage } from '../subscriptions/input.js';
import { ignoreEmptyBody, readJsonBodies, requireJsonBody } from './eventmatch-routes.js';
import { EVERY_ROUTE, eventmatchErrors, identityHeaders, JSON_BODY, pageQuerystring, timestamp, uuidParams } from './eventmatch-schemas.js';
import { actingUser, type IdentityOptions } from './identity.js';

export interface DeliveriesDependencies extends DeliveryRetryDependencies {
  database: DatabaseHandle;
  identity: IdentityOptions;
}

/** Each match carries its attempts (up to the retry schedule's length, plus policy retries). */
const DELIVERIES_PAGE = { default: 50, max: 200 };

export function deliveriesRoutes(deps: DeliveriesDependencies) {
  return async (app: FastifyInstance) => {
    const schema = deliveriesSchema(deps.identity.header);
    const history = deliveryHistory(deps.database);
    const retries = deliveryRetry(deps);
    const user = (request: FastifyRequest) => actingUser(request, deps.identity);
    // Who is asking is settled first: 401 before any 400 or 404.
    const onRequest = async (request: FastifyRequest) => void user(request);

    app.get<{ Params: { uuid: string }; Querystring: Record<string, string> }>(
      '/eventmatch/:uuid/deliveries',
      { schema, onRequest },
      async (request): Promise<DeliveryRecord[]> => {
        const page = parsePage(request.query, DELIVERIES_PAGE);
        return history.list(user(request), request.params.uuid, page);
      },
    );

    // The event's text as logged, sent as it is: the producer's numbers and escapes, unchanged.
    app.get<{ Params: { uuid: string; elm: string } }>(
      '/eventmatch/:uuid/deliveries/:elm/event',
      { schema: eventSchema(deps.identity.header), onRequest },
      async (request, reply) => {
        const text = await history.event(user(request), request.params.uuid, request.params.elm);
        return reply
          .type('application/json; charset=utf-8')
          .serializer((payload) => payload as string)
          .send(text);
      },
    );

    // A body, if one is sent, is read by Fastify's parsers and ignored.
    app.post<{ Params: { uuid: string; elm: string } }>(
      '/eventmatch/:uuid/deliveries/:elm/retry',
      { schema: retrySchema(deps.identity.header), onRequest },
      async (request, reply) => {
        const record = await retries.retry(user(request), request.params.uuid, request.params.elm);
        return reply.code(202).send(record);
      },
    );

    // The window is a JSON body, read as strictly as /eventmatch reads its bodies.
    await app.register(async (scope) => {
      readJsonBodies(scope);
      scope.post<{ Params: { uuid: string }; Body: RecoverWindow }>(
        '/eventmatch/:uuid/deliveries/recover',
        {
          schema: recoverSchema(deps.identity.header, deps.recoverLimit ?? RECOVER_LIMIT),
          onRequest: [onRequest, ignoreEmptyBody, requireJsonBody],
          // No body at all is answered as one without `since`.
          preValidation: async (request) => void (request.body ??= {} as RecoverWindow),
        },
        async (request, reply) => {
          const recovered = await retries.recover(user(request), request.params.uuid, request.body);
          return reply.code(202).send(recovered);
        },
      );
    });
  };
}

const attempt = {
  type: 'object',
  properties: {
    at: { ...timestamp, description: 'when the answer (or the failure) came; UTC, YYYY-MM-DDTHH:MM:SS.ffffff' },
    stage: {
      type: 'string',
      enum: ['policy', 'deliver', 'pull'],
      description: 'a policy call that got no decision, a try at the target, or (pull) the reader reading past it',
    },
    status: { type: ['integer', 'null'], description: 'the HTTP status answered; null when no answer came' },
    error: { type: ['string', 'null'], description: 'what went wrong without (or while reading) an answer, e.g. a time-out' },
    duration_ms: { type: 'integer' },
  },
  required: ['at', 'stage', 'status', 'error', 'duration_ms'],
} as const;

const deliveryRecord = {
  type: 'object',
  properties: {
    elm: { type: 'string', format: 'uuid', description: 'the match (event log match) uuid' },
    event: {
      type: 'object',
      properties: {
        uuid: { type: 'string', format: 'uuid', description: 'the event log uuid' },
        id: { type: 'string', description: 'the CloudEvent id' },
        type: { type: 'string' },
        source: { type: 'string' },
      },
      required: ['uuid', 'id', 'type', 'source'],
    },
    created: { ...timestamp, description: 'when the event matched; UTC, YYYY-MM-DDTHH:MM:SS.ffffff' },
    state: {
      type: 'string',
      enum: ['policy', 'deliver', 'pending', 'delivered', 'denied', 'failed', 'cancelled', 'expired'],
      description:
        'policy: waiting for the policy decision; deliver: waiting for (or retrying) delivery; pending (pull): readable, not ' +
        'acknowledged yet; then delivered, denied, failed or cancelled, or (pull) expired: never read within the retention',
    },
    policy: { type: ['integer', 'null'], description: "the policy service's HTTP status (200 in allow-all mode); null until decided" },
    target: { type: ['integer', 'null'], description: "the target's latest HTTP status; null until there is one" },
    attempts: { type: 'array', items: attempt, description: 'oldest first' },
  },
  required: ['elm', 'event', 'created', 'state', 'policy', 'target', 'attempts'],
} as const;

const deliveryParams = {
  type: 'object',
  properties: {
    uuid: { type: 'string', description: 'the subscription uuid' },
    elm: { type: 'string', description: 'the delivery (event log match) uuid, as its history lists it' },
  },
  required: ['uuid', 'elm'],
} as const;

function eventSchema(userHeader: string) {
  return {
    tags: ['subscriptions'],
    summary: 'The event of one delivery, as the event log holds it: to try an expression on',
    description:
      'Owner only (a deleted subscription’s too). The structured-mode JSON form the subscriptions were matched against, ' +
      'exactly as the producer sent it (a subscription’s extensions are added only to what its target receives). ' +
      'An elm that is not one of this subscription’s deliveries, or whose event retention purged: 404 DELIVERY_NOT_FOUND.',
    headers: identityHeaders(userHeader),
    params: deliveryParams,
    response: {
      200: { type: 'object', additionalProperties: true, description: 'The CloudEvent, in structured-mode JSON form' },
      ...eventmatchErrors(...EVERY_ROUTE, 'SUBSCRIPTION_NOT_FOUND', 'DELIVERY_NOT_FOUND'),
    },
  };
}

function retrySchema(userHeader: string) {
  return {
    tags: ['subscriptions'],
    summary: 'Queue one delivery again now: a fresh policy check, then delivery, whatever its state',
    description:
      'Owner only. Its attempts stay in its history and its retry schedule starts afresh. A disabled subscription must be ' +
      'enabled first (409 SUBSCRIPTION_DISABLED). A delivery a runner holds right now (in flight, or waiting its turn) is ' +
      'left to it (409 DELIVERY_IN_PROGRESS, with Retry-After): ask again once it has settled.',
    headers: identityHeaders(userHeader),
    params: deliveryParams,
    response: {
      202: { ...deliveryRecord, description: 'The delivery, queued again (state policy)' },
      ...eventmatchErrors(...EVERY_ROUTE, 'SUBSCRIPTION_NOT_FOUND', 'DELIVERY_NOT_FOUND', 'SUBSCRIPTION_DISABLED', 'DELIVERY_IN_PROGRESS'),
    },
  };
}

const windowBound = (which: string) =>
  `${which}, in the delivery history's created format: UTC, YYYY-MM-DDTHH:MM:SS.ffffff (the fraction may be shorter, or left out)`;

function recoverSchema(userHeader: string, limit: number) {
  return {
    tags: ['subscriptions'],
    summary: 'Queue again every delivery that failed, or was cancelled by a disable, among those created within a window',
    description:
      'Owner only. Each goes through a fresh policy check, then delivery, as a retry does; its attempts stay in its history ' +
      'and its retry schedule starts afresh. Denied, delivered and unfinished deliveries are left as they are, and so is a ' +
      'delivery a runner holds right now (not counted). A pull subscription has no failed deliveries: its cancelled ones ' +
      'become readable again, after the latest cursor. A disabled subscription must be enabled first (409 SUBSCRIPTION_DISABLED). ' +
      `All or none, in one transaction: a window holding more than ${limit} of them is refused (400 ` +
      'RECOVER_WINDOW_TOO_LARGE); recover narrower windows one after another.',
    headers: identityHeaders(userHeader),
    params: uuidParams,
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        since: { type: 'string', description: windowBound('the first creation time taken (included)') },
        until: { type: ['string', 'null'], description: windowBound('the last creation time taken (included); absent or null: up to now') },
      },
      required: ['since'],
    },
    response: {
      202: {
        type: 'object',
        properties: { requeued: { type: 'integer', minimum: 0, description: 'how many deliveries were queued again' } },
        required: ['requeued'],
        description: 'Queued again: they are in state policy',
      },
      ...eventmatchErrors(
        ...EVERY_ROUTE,
        ...JSON_BODY,
        'FIELD_REQUIRED',
        'FIELD_UNKNOWN',
        'FIELD_TYPE',
        'FIELD_INVALID',
        'RECOVER_WINDOW_TOO_LARGE',
        'SUBSCRIPTION_NOT_FOUND',
        'SUBSCRIPTION_DISABLED',
      ),
    },
  };
}

function deliveriesSchema(userHeader: string) {
  return {
    tags: ['subscriptions'],
    summary: "A subscription's recent matches and their delivery attempts, newest first",
    description:
      'Owner only. Missing, malformed or another user’s subscription: 404. A deleted subscription’s history stays readable by its owner.',
    headers: identityHeaders(userHeader),
    params: uuidParams,
    querystring: pageQuerystring(DELIVERIES_PAGE),
    response: {
      200: { type: 'array', items: deliveryRecord },
      ...eventmatchErrors(...EVERY_ROUTE, 'QUERY_PARAMETER_INVALID', 'SUBSCRIPTION_NOT_FOUND'),
    },
  };
}
