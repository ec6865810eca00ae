/**
 * `GET /eventmatch/{uuid}/events?after=&limit=&wait=`: a pull subscription's events after a
 * cursor, for its owner (pull/reader.ts reads, pull/waiters.ts waits; the server shares the reads
 * of readers woken together: pull/shared-reads.ts). Sending `after`
 * acknowledges every event up to it. An empty answer with `wait` waits for the next event
 * without asking the database anything meanwhile; the route holds no database deadline while it
 * waits (each read has its own), and a client that goes away stops its wait at once. The same
 * events as Server-Sent Events: events-stream-route.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { serviceError } from '../errors.js';
import { FIRST_CURSOR, formatCursor, parseCursor, type PulledEvent, type PullReader } from '../pull/reader.js';
import type { PullWaiters } from '../pull/waiters.js';
import { EVERY_ROUTE, eventmatchErrors, identityHeaders, uuidParams } from './eventmatch-schemas.js';
import { eventsStreamRoute } from './pull-events-stream-route.js';
import { actingUser, type IdentityOptions } from './identity.js';

export interface EventsRoutesDependencies {
  reader: PullReader;
  waiters: PullWaiters;
  identity: IdentityOptions;
  /** The stream's longest silence before a comment (default KEEP_ALIVE_MS; tests shorten it). */
  streamKeepAliveMs?: number;
}

export const EVENTS_LIMIT = { default: 100, max: 1000 };
/** Seconds a request may wait for its first event. */
export const MAX_WAIT_SECONDS = 60;

interface EventsQuery {
  after?: string;
  limit?: number;
  wait?: number;
}

export function eventsRoutes(deps: EventsRoutesDependencies) {
  return (app: FastifyInstance) => {
    const user = (request: FastifyRequest) => actingUser(request, deps.identity);
    // Waits end when the server closes: the readers get what there is (nothing) at once.
    app.addHook('preClose', async () => deps.waiters.close());
    const { reader } = deps;
    const { streamKeepAliveMs, ...stream } = deps;
    eventsStreamRoute({ ...stream, ...(streamKeepAliveMs === undefined ? {} : { keepAliveMs: streamKeepAliveMs }) })(app);

    app.get<{ Params: { uuid: string }; Querystring: EventsQuery }>(
      '/eventmatch/:uuid/events',
      { schema: eventsSchema(deps.identity.header), onRequest: async (request) => void user(request), config: { deadline: false } },
      async (request, reply) => {
        const { after: afterText, limit = EVENTS_LIMIT.default, wait = 0 } = request.query;
        const after = afterText === undefined ? FIRST_CURSOR : parseCursor(afterText);
        if (after === undefined)
          throw serviceError(
            'QUERY_PARAMETER_INVALID',
            'querystring.after',
            'must be a cursor this service gave (the "next" or an event\'s "cursor")',
          );
        const subscription = await reader.subscription(user(request), request.params.uuid);
        if (afterText !== undefined) await reader.acknowledge(subscription, after);
        const gone = new AbortController();
        const leave = () => gone.abort();
        reply.raw.once('close', leave);
        try {
          const until = Date.now() + wait * 1000;
          for (;;) {
            const left = until - Date.now();
            // Registered before the read: rows made readable while it runs end the wait at once.
            const waiting = left > 0 ? deps.waiters.wait(subscription.uuid, after, left, gone.signal) : undefined;
            const events = await reader.read(subscription, after, limit).finally(() => {
              if (gone.signal.aborted) waiting?.cancel();
            });
            if (events.length > 0 || waiting === undefined) {
              waiting?.cancel();
              return send(reply, events, afterText ?? formatCursor(FIRST_CURSOR));
            }
            if ((await waiting.ended) !== 'woken') return send(reply, [], afterText ?? formatCursor(FIRST_CURSOR));
          }
        } finally {
          reply.raw.off('close', leave);
        }
      },
    );
  };
}

/** The events' text as read: each event's JSON is written as it is, not parsed and serialized again. */
function send(reply: FastifyReply, events: readonly PulledEvent[], after: string): FastifyReply {
  const next = events.length > 0 ? events[events.length - 1]!.cursor : after;
  const items = events.map((e) => `{"cursor":${JSON.stringify(e.cursor)},"elm":${JSON.stringify(e.elm)},"event":${e.event}}`);
  return reply
    .type('application/json; charset=utf-8')
    .serializer((payload) => payload as string)
    .send(`{"events":[${items.join(',')}],"next":${JSON.stringify(next)}}`);
}

function eventsSchema(userHeader: string) {
  return {
    tags: ['subscriptions'],
    summary: "A pull subscription's events after a cursor, in the order they became readable",
    description:
      'Owner only (anyone else: 404). Sending after acknowledges every event up to it (delivered in the history, one attempt ' +
      'of stage pull). With wait, an empty answer waits up to that many seconds and returns as soon as an event is readable. ' +
      'A push subscription: 409 SUBSCRIPTION_NOT_PULL.',
    headers: identityHeaders(userHeader),
    params: uuidParams,
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        after: { type: 'string', description: 'the cursor read up to ("next" of the last answer); absent: from the oldest kept' },
        limit: { type: 'integer', minimum: 1, maximum: EVENTS_LIMIT.max, description: `events at most (default ${EVENTS_LIMIT.default})` },
        wait: { type: 'integer', minimum: 0, maximum: MAX_WAIT_SECONDS, description: 'seconds an empty answer may wait (default 0)' },
      },
    },
    response: {
      200: {
        type: 'object',
        properties: {
          events: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                cursor: { type: 'string', description: 'opaque; send it as after to read on from here' },
                elm: { type: 'string', format: 'uuid', description: 'the delivery (event log match) uuid' },
                event: { type: 'object', additionalProperties: true, description: 'the CloudEvent, with the subscription’s extensions' },
              },
              required: ['cursor', 'elm', 'event'],
            },
          },
          next: { type: 'string', description: 'the cursor to send next (after itself when no event came)' },
        },
        required: ['events', 'next'],
      },
      ...eventmatchErrors(...EVERY_ROUTE, 'QUERY_PARAMETER_INVALID', 'SUBSCRIPTION_NOT_FOUND', 'SUBSCRIPTION_NOT_PULL'),
    },
  };
}
