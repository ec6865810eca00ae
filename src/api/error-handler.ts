/**
 * The one place where errors become answers: our ServiceErrors, Fastify's own (validation,
 * body size, media type, malformed JSON, a URL that cannot be decoded), what Node's HTTP parser
 * refuses before there is a request, and anything unexpected (500, logged, never shown).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isStorageFull } from '../db/storage-full.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { databaseUnavailable, errorBody, ServiceError, serviceError, storageFull, unsupportedJsonBody } from '../errors.js';
import { validationError } from '../request-body/validation-messages.js';

export type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void;

/** `databaseTimeoutMs`: NOTIFICATIONS_DATABASE_TIMEOUT, which a 503 for the database names. */
export function errorHandler(databaseTimeoutMs: number): ErrorHandler {
  return (error, request, reply) => {
    // A database that does not answer, went away, or has no space for a write is a 503 to ask
    // again later, never a 500. A full one is logged by the database's storage watch, at most
    // once a minute, not here once per request.
    if (error instanceof ServiceError) handleError(error, request, reply);
    else if (isClientGone(error, request)) handleError(clientGoneError(error, request), request, reply);
    else if (isStorageFull(error)) handleError(storageFull(), request, reply);
    else if (isDatabaseUnavailable(error)) handleError(databaseUnavailableError(error, databaseTimeoutMs, request), request, reply);
    else handleError(error, request, reply);
  };
}

/**
 * The request's own stream failed: its client closed or reset the connection before the body
 * was in (Node's "aborted", ECONNRESET). The database's driver says ECONNRESET too, so the code
 * alone would take a client that went away for a database outage: what tells them apart is
 * where the error came from.
 */
function isClientGone(error: FastifyError, request: FastifyRequest): boolean {
  return request.raw.errored === error;
}

/** Nobody is left to read the answer; it is sent all the same, so that the request ends as any other. */
function clientGoneError(error: FastifyError, request: FastifyRequest): ServiceError {
  request.log.debug({ code: error.code }, 'the client went away before its request was read whole');
  return serviceError('BODY_INCOMPLETE', 'the connection ended before the body was complete');
}

function databaseUnavailableError(cause: unknown, timeoutMs: number, request: FastifyRequest): ServiceError {
  request.log.warn({ err: cause }, 'the database is not answering: 503');
  return databaseUnavailable(timeoutMs);
}

function handleError(error: FastifyError | ServiceError, request: FastifyRequest, reply: FastifyReply): void {
  const answer = error instanceof ServiceError ? error : fromFastify(error, request);
  if (answer === undefined) {
    request.log.error({ err: error }, 'unexpected error');
    send(reply, serviceError('INTERNAL'));
    return;
  }
  if (answer.statusCode >= 500 && !QUIET_CODES.has(answer.code)) request.log.error({ err: error }, error.message);
  send(reply, answer);
}

/** 5xx answers logged elsewhere, with their cause: not once more as an error of the request. */
const QUIET_CODES: ReadonlySet<string> = new Set(['DATABASE_UNAVAILABLE', 'STORAGE_FULL']);

function send(reply: FastifyReply, error: ServiceError): void {
  if (error.retryAfterSeconds !== undefined) void reply.header('retry-after', String(error.retryAfterSeconds));
  void reply.status(error.statusCode).send(errorBody(error.code, error.message, error.details));
}

/**
 * Fastify's errors, by their codes only: a SyntaxError of ours (a stored value that does not
 * parse) is a 500, not a 400 blaming the body. undefined: not the client's fault (a 500).
 */
function fromFastify(error: FastifyError, request: FastifyRequest): ServiceError | undefined {
  if (error.validation) {
    const data = validatedData(request, error.validationContext);
    return validationError(error.validation, error.validationContext, request.routeOptions.schema, data);
  }
  const path = request.url.split('?')[0] ?? '';
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return serviceError('BODY_TOO_LARGE', request.routeOptions.bodyLimit);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return unsupportedJsonBody();
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return serviceError('BODY_NOT_JSON', 'empty; send a JSON object');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return serviceError('BODY_NOT_JSON', `not valid JSON (${error.message})`);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return serviceError('BODY_INCOMPLETE', 'its length differs from the Content-Length header');
    case 'FST_ERR_BAD_URL':
      return serviceError('PATH_INVALID', path);
    // Not reached while parameters may be as long as a request line (app.ts).
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return serviceError('ROUTE_NOT_FOUND', request.method, path);
  }
  // Another refusal of the request (a plugin's, a later Fastify's): still the client's to fix.
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500)
    return serviceError('REQUEST_INVALID', error.message);
  return undefined;
}

function validatedData(request: FastifyRequest, context: FastifyError['validationContext']): unknown {
  switch (context) {
    case 'querystring':
      return request.query;
    case 'params':
      return request.params;
    case 'headers':
      return request.headers;
    default:
      return request.body;
  }
}

/** `clientError` codes of Node's HTTP parser with an answer of their own; the others are REQUEST_INVALID. */
const CLIENT_ERRORS: Record<string, () => ServiceError> = {
  HPE_HEADER_OVERFLOW: () => serviceError('HEADERS_TOO_LARGE'),
  ERR_HTTP_REQUEST_TIMEOUT: () => serviceError('REQUEST_TIMEOUT'),
  HPE_INVALID_EOF_STATE: () =>
    serviceError('BODY_INCOMPLETE', 'the connection ended before the body was complete (shorter than its Content-Length)'),
};

/**
 * Node's HTTP parser refused what arrived on a connection (not HTTP, headers too large, a body
 * cut short, bytes after a body shorter than its Content-Length said): there is no request to
 * answer, so the answer is written to the socket, which is then closed, as Node itself does.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket, log: FastifyBaseLogger): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const answer =
    CLIENT_ERRORS[error.code ?? '']?.() ??
    serviceError('REQUEST_INVALID', `not valid HTTP/1.1 (${error.message.replace(/^Parse Error: /, '')})`);
  log.debug({ err: error }, 'client error');
  if (socket.writable) {
    const status = answer.statusCode;
    const body = JSON.stringify(errorBody(answer.code, answer.message));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
