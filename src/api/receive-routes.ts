/**
 * `POST /receive`: CloudEvents in structured, binary or batched mode. The body is taken raw
 * (any media type, no content coding) and handed to cloudevents/, which decides what it is; 200 only after the
 * events and their matches are committed.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseReceived } from '../cloudevents/index.js';
import { serviceError } from '../errors.js';
import { type ReceiveDependencies, receiveEvent } from '../receive/receive.js';
import type { Metrics } from '../metrics/metrics.js';
import type { PeerList } from '../net/peer-list.js';
import { refuseContentCoding } from './content-coding.js';
import { errorResponses } from './error-responses.js';

export interface ReceiveRouteDependencies extends ReceiveDependencies {
  /** `NOTIFICATIONS_RECEIVE_TOKEN`: when set, `Authorization: Bearer <token>` is required. */
  receiveToken: string | null;
  /** `NOTIFICATIONS_RECEIVE_ALLOW`: the peers that may post; null: any. */
  receiveAllow?: PeerList | null;
  /** Events were logged with matches: the policy stage has work. */
  onReceived: () => void;
  metrics?: Metrics;
}

const RECEIVE_STATUSES: Record<number, string> = {
  400:
    'Not a valid CloudEvent, not valid JSON, or a query parameter (the route takes none); the message names the attribute ' +
    '(ce-* header, [index] in a batch) or parameter at fault. Nothing was logged',
  401: 'NOTIFICATIONS_RECEIVE_TOKEN is set and the request lacks Authorization: Bearer <that token>',
  403: 'NOTIFICATIONS_RECEIVE_ALLOW is set and the peer is outside it; nothing of the request is logged',
  413: 'The body is larger than NOTIFICATIONS_MAX_BODY',
  415: 'Neither structured, binary nor batched mode, a JSON charset other than UTF-8, or a Content-Encoding',
  500: 'Server error',
  503: 'The database did not answer within NOTIFICATIONS_DATABASE_TIMEOUT, or refused the write for lack of space; nothing was logged; send the event again after Retry-After seconds',
};

const RECEIVE_ERRORS = errorResponses(
  [
    'CLOUDEVENT_INVALID',
    'QUERY_PARAMETER_INVALID',
    'BODY_NOT_JSON',
    'BODY_TOO_DEEP',
    'BODY_INCOMPLETE',
    'UNAUTHENTICATED',
    'RECEIVE_FORBIDDEN',
    'BODY_TOO_LARGE',
    'MEDIA_TYPE_UNSUPPORTED',
    'CONTENT_ENCODING_UNSUPPORTED',
    'INTERNAL',
    'DATABASE_UNAVAILABLE',
    'STORAGE_FULL',
  ],
  (status) => RECEIVE_STATUSES[status] ?? String(status),
);

export function receiveRoutes(deps: ReceiveRouteDependencies) {
  const expectedToken = deps.receiveToken === null ? null : Buffer.from(deps.receiveToken);
  const allowed = deps.receiveAllow ?? null;
  const forbidden = (raw: IncomingMessage) => allowed !== null && !allowed.includes(raw.socket.remoteAddress);
  return async (app: FastifyInstance) => {
    await app.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
      scope.post(
        '/receive',
        {
          schema: { tags: ['receiving'], summary: 'Receive a CloudEvent (structured, binary or batched mode)', response: RECEIVE_ERRORS },
          // The request log of a forbidden peer is silent (no line as it comes in or is answered):
          // a flood from outside the list cannot fill the log.
          childLoggerFactory: (logger, bindings, options, raw) =>
            logger.child(bindings, forbidden(raw as IncomingMessage) ? { ...options, level: 'silent' } : options),
          onRequest: (request, reply, done) => {
            if (forbidden(request.raw)) throw serviceError('RECEIVE_FORBIDDEN', request.socket.remoteAddress ?? 'a closed connection');
            checkToken(request, expectedToken);
            refuseContentCoding(request, reply);
            done();
          },
        },
        async (request) => {
          const { batch, events } = parseReceived({
            contentType: request.headers['content-type'],
            headers: request.headers,
            body: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
          });
          const logged = await Promise.all(events.map((event) => receiveEvent(deps, event)));
          if (logged.some((l) => !l.duplicate && l.matches > 0)) deps.onReceived();
          for (const { duplicate, matches } of logged) {
            deps.metrics?.eventReceived(duplicate);
            if (!duplicate) deps.metrics?.matched(matches);
          }
          const answers = logged.map(({ uuid, matches, duplicate }) => (duplicate ? { uuid, matches, duplicate } : { uuid, matches }));
          return batch ? answers : answers[0];
        },
      );
    });
  };
}

function checkToken(request: FastifyRequest, expected: Buffer | null): void {
  if (expected === null) return;
  const given = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
  const actual = Buffer.from(given);
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) {
    throw serviceError(
      'UNAUTHENTICATED',
      'missing or wrong bearer token',
      '/receive requires Authorization: Bearer <NOTIFICATIONS_RECEIVE_TOKEN>',
    );
  }
}
