/**
 * The one place where errors become answers: our ServiceErrors, Fastify's own (validation,
 * body size, media type, malformed JSON, a URL that cannot be decoded), what Node's HTTP parser
 * refuses before there is a request, and anything unexpected (500, logged, never shown).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { databaseUnavailable, errorBody, ServiceError, unsupportedJsonBody } from '../errors.js';
import { describeValidationErrors } from './validation-messages.js';

const FASTIFY_STATUS: Record<string, number> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 413,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 415,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 400,
  FST_ERR_CTP_EMPTY_JSON_BODY: 400,
  FST_ERR_CTP_INVALID_JSON_BODY: 400,
  FST_ERR_BAD_URL: 400,
  // Not reached while parameters may be as long as a request line (app.ts); a uuid is not found.
  FST_ERR_MAX_PARAM_LENGTH: 404,
};

export type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void;

/** `databaseTimeoutMs`: NOTIFICATIONS_DATABASE_TIMEOUT, which a 503 for the database names. */
export function errorHandler(databaseTimeoutMs: number): ErrorHandler {
  return (error, request, reply) => {
    // A database that does not answer, or went away, is a 503 to ask again later, never a 500.
    handleError(isDatabaseUnavailable(error) && !(error instanceof ServiceError) ? databaseUnavailableError(error, databaseTimeoutMs, request) : error, request, reply);
  };
}

function databaseUnavailableError(cause: unknown, timeoutMs: number, request: FastifyRequest): FastifyError {
  request.log.warn({ err: cause }, 'the database is not answering: 503');
  return databaseUnavailable(timeoutMs) as ServiceError & FastifyError;
}

function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error instanceof ServiceError) {
    if (error.statusCode >= 500 && error.kind !== 'unavailable') request.log.error({ err: error }, error.message);
    if (error.retryAfterSeconds !== undefined) void reply.header('retry-after', String(error.retryAfterSeconds));
    void reply.status(error.statusCode).send(errorBody(error.statusCode, error.message));
    return;
  }
  if (error.validation) {
    const schema = request.routeOptions.schema;
    const message = describeValidationErrors(error.validation, error.validationContext, schema, validatedData(request, error.validationContext));
    void reply.status(400).send(errorBody(400, message));
    return;
  }
  // Fastify's errors by their codes only: a SyntaxError of ours (a stored value that does not
  // parse) is a 500, not a 400 blaming the body.
  const status = error.code ? FASTIFY_STATUS[error.code] : undefined;
  if (status) {
    void reply.status(status).send(errorBody(status, clientMessage(error, status, request)));
    return;
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    void reply.status(error.statusCode).send(errorBody(error.statusCode, error.message));
    return;
  }
  request.log.error({ err: error }, 'unexpected error');
  void reply.status(500).send(errorBody(500, 'internal error; the request id in the log tells what happened'));
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

function clientMessage(error: FastifyError, status: number, request: FastifyRequest): string {
  const path = request.url.split('?')[0];
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `body: larger than the limit of ${request.routeOptions.bodyLimit ?? 'the configured'} bytes (NOTIFICATIONS_MAX_BODY)`;
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'body: empty; send a JSON object';
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'body: its length differs from the Content-Length header';
    case 'FST_ERR_BAD_URL':
      return `path: ${path} is not a valid URL path (a % must start an escape of two hex digits, spelling UTF-8)`;
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return `not found: ${path}`;
  }
  if (status === 415) return unsupportedJsonBody().message;
  return `body: not valid JSON (${error.message})`;
}

/** `clientError` codes of Node's HTTP parser with an answer of their own; the others are 400. */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, "headers: the request line and headers are larger than the server accepts (Node's limit, 16 KiB by default)"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request: not received in time'],
  HPE_INVALID_EOF_STATE: [400, 'body: the connection ended before the body was complete (shorter than its Content-Length)'],
};

/**
 * Node's HTTP parser refused what arrived on a connection (not HTTP, headers too large, a body
 * cut short, bytes after a body shorter than its Content-Length said): there is no request to
 * answer, so the answer is written to the socket, which is then closed, as Node itself does.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket, log: FastifyBaseLogger): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, `request: not valid HTTP/1.1 (${error.message.replace(/^Parse Error: /, '')})`];
  log.debug({ err: error }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(errorBody(status, message));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
