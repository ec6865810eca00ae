/**
 * `GET /eventmatch/{uuid}/events/stream`: a pull subscription's events as Server-Sent Events,
 * for its owner, live as they become readable. Each event is written as `id:` its cursor,
 * `event: cloudevent`, `data:` the event on one line, then acknowledged (delivered in the
 * history). Between events the stream waits in the same registry as the long poll
 * (pull/waiters.ts), asking the database nothing, and writes a comment whenever it has been
 * silent for KEEP_ALIVE_MS. A client resumes after `Last-Event-ID` (or `?after=`); one that
 * hangs up takes its waiter along at once; a closing server ends every stream.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { serviceError } from '../errors.js';
import { formatCursor, parseCursor, type PullReader } from '../pull/reader.js';
import type { PullWaiters, WaitEnd } from '../pull/waiters.js';
import type { SubscriptionRow } from '../db/tables.js';
import { EVERY_ROUTE, eventmatchErrors, identityHeaders, uuidParams } from './eventmatch-schemas.js';
import { actingUser, type IdentityOptions } from './identity.js';
import { comment, EVENT_STREAM_TYPE, jsonEvent } from './server-sent-events.js';

export interface EventsStreamDependencies {
  reader: PullReader;
  waiters: PullWaiters;
  identity: IdentityOptions;
  /** The longest silence before a comment is written (default KEEP_ALIVE_MS; tests shorten it). */
  keepAliveMs?: number;
}

/** Proxies commonly drop a response silent for 30 s or more; a comment goes out well before. */
export const KEEP_ALIVE_MS = 15_000;
/** Events read (and written, then acknowledged) at a time. */
const READ_BATCH = 100;
export const STREAM_EVENT_TYPE = 'cloudevent';

export function eventsStreamRoute(deps: EventsStreamDependencies) {
  const keepAliveMs = deps.keepAliveMs ?? KEEP_ALIVE_MS;
  return (app: FastifyInstance) => {
    const user = (request: FastifyRequest) => actingUser(request, deps.identity);
    // Streams end when the server closes (their waits end, and so does a write a client does not read).
    const closing = new AbortController();
    app.addHook('preClose', async () => {
      closing.abort();
      deps.waiters.close();
    });

    app.get<{ Params: { uuid: string }; Querystring: { after?: string } }>(
      '/eventmatch/:uuid/events/stream',
      { schema: streamSchema(deps.identity.header), onRequest: async (request) => void user(request), config: { deadline: false } },
      async (request, reply) => {
        const from = startCursor(request);
        const subscription = await deps.reader.subscription(user(request), request.params.uuid);
        // Resuming after a cursor says everything up to it arrived.
        if (from !== undefined) await deps.reader.acknowledge(subscription, from);
        reply.hijack();
        reply.raw.writeHead(200, {
          'content-type': EVENT_STREAM_TYPE,
          'cache-control': 'no-store',
          // nginx would otherwise hold the events back in its buffer.
          'x-accel-buffering': 'no',
          // A stream ends only when its client leaves, the server closes, or the database fails:
          // its connection is not kept for another request, so a closing server waits for none.
          connection: 'close',
          'x-request-id': request.id,
        });
        if (request.method === 'HEAD') return void reply.raw.end();
        const stream: Stream = { ...deps, keepAliveMs, subscription, response: reply.raw, closing: closing.signal, log: request.log };
        await writeEvents(stream, from ?? 0);
      },
    );
  };
}

/** `Last-Event-ID` (a reconnecting EventSource sends it, with the URL's `after` unchanged), else `after`. */
function startCursor(request: FastifyRequest<{ Querystring: { after?: string } }>): number | undefined {
  const header = request.headers['last-event-id'];
  if (typeof header === 'string' && header !== '') {
    const cursor = parseCursor(header);
    if (cursor === undefined) throw serviceError('FIELD_INVALID', 'last-event-id', 'must be an event id this stream sent (a cursor)');
    return cursor;
  }
  const after = request.query.after;
  if (after === undefined) return undefined;
  const cursor = parseCursor(after);
  if (cursor === undefined)
    throw serviceError('QUERY_PARAMETER_INVALID', 'querystring.after', "must be a cursor this service gave (an event's id)");
  return cursor;
}

interface Stream {
  reader: PullReader;
  waiters: PullWaiters;
  keepAliveMs: number;
  subscription: SubscriptionRow;
  response: ServerResponse;
  closing: AbortSignal;
  log: FastifyBaseLogger;
}

/** Writes the events after `after` until the client leaves, the server closes, or the database fails. */
async function writeEvents(stream: Stream, after: number): Promise<void> {
  const { reader, waiters, subscription, response, keepAliveMs } = stream;
  const gone = new AbortController();
  const leave = () => gone.abort();
  response.once('close', leave);
  // Not AbortSignal.any: each would stay tied to the server's long-lived `closing` signal.
  const stops = [gone.signal, stream.closing];
  let lastWrite = 0;
  let flushed = true;
  const send = async (text: string) => {
    flushed = await written(response, text, stops);
    lastWrite = Date.now();
    return flushed;
  };
  /**
   * One turn: a keep-alive comment when the last wait timed out, then, unless that was all
   * (nothing woke the wait, so nothing became readable), a read, whose events are written and
   * acknowledged. 'again': a full batch came, read on; 'wait': wait for the next wake (at once
   * when one came meanwhile).
   */
  const turn = async (ended: WaitEnd | undefined): Promise<'again' | 'wait' | 'stop'> => {
    if (ended === 'timeout' && !(await send(comment('keep-alive')))) return 'stop';
    if (ended === 'timeout') return 'wait';
    const events = await reader.read(subscription, after, READ_BATCH);
    if (events.length === 0) return 'wait';
    if (!(await send(events.map((e) => jsonEvent(e.cursor, STREAM_EVENT_TYPE, e.event)).join('')))) return 'stop';
    after = parseCursor(events[events.length - 1]!.cursor)!;
    await reader.acknowledge(subscription, after);
    // A batch not full was all there was when read: what came since has woken the wait.
    return events.length === READ_BATCH ? 'again' : 'wait';
  };
  try {
    // The headers go out with it: the client knows at once that the stream is open.
    if (!(await send(comment('stream open')))) return;
    let ended: WaitEnd | undefined;
    for (;;) {
      const silence = ended === 'timeout' ? 0 : Date.now() - lastWrite;
      // Registered before the turn: rows made readable while it reads or writes end the wait at once.
      const waiting = waiters.wait(subscription.uuid, after, Math.max(0, keepAliveMs - silence), gone.signal);
      const next = await turn(ended).catch((error: unknown) => {
        waiting.cancel();
        throw error;
      });
      if (next !== 'wait') waiting.cancel();
      if (next === 'stop') return;
      ended = next === 'again' ? undefined : await waiting.ended;
      if (ended === 'aborted' || ended === 'closing') return;
    }
  } catch (error) {
    stream.log.warn(
      { err: error, subscription: subscription.uuid, after: formatCursor(after) },
      'event stream: ended by a failure; its client resumes after the last id it received',
    );
  } finally {
    response.off('close', leave);
    // What a client does not read cannot hold the server: a write still waiting is dropped.
    if (flushed) response.end();
    else response.destroy();
  }
}

/** Whether `text` reached the connection (false: one of `stops` came first, or the connection failed). */
function written(response: ServerResponse, text: string, stops: readonly AbortSignal[]): Promise<boolean> {
  if (stops.some((stop) => stop.aborted)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const end = (flushed: boolean) => {
      for (const stop of stops) stop.removeEventListener('abort', onStop);
      resolve(flushed);
    };
    const onStop = () => end(false);
    for (const stop of stops) stop.addEventListener('abort', onStop, { once: true });
    response.write(text, (error) => end(!error));
  });
}

function streamSchema(userHeader: string) {
  const headers = identityHeaders(userHeader);
  return {
    tags: ['subscriptions'],
    summary: "A pull subscription's events as Server-Sent Events, live",
    description:
      'Owner only (anyone else: 404). text/event-stream: each event is id (its cursor), event: cloudevent, data (the event JSON ' +
      'on one line); a comment at least every 15 s of silence. Starts after Last-Event-ID, else after, else from the oldest ' +
      'kept. Each event written is acknowledged (delivered in the history). A push subscription: 409 SUBSCRIPTION_NOT_PULL.',
    headers: {
      ...headers,
      properties: {
        ...headers.properties,
        'last-event-id': { type: 'string', description: 'the id of the last event received: the stream goes on after it' },
      },
    },
    params: uuidParams,
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        after: { type: 'string', description: 'the cursor read up to (an event id); Last-Event-ID, when sent, wins' },
      },
    },
    produces: ['text/event-stream'],
    response: {
      200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
      ...eventmatchErrors(...EVERY_ROUTE, 'FIELD_INVALID', 'QUERY_PARAMETER_INVALID', 'SUBSCRIPTION_NOT_FOUND', 'SUBSCRIPTION_NOT_PULL'),
    },
  };
}
