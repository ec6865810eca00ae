/**
 * The one place where errors become answers: our ServiceErrors, Fastify's own (validation,
 * body size, media type, malformed JSON) and anything unexpected (500, logged, never shown).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, ServiceError, unsupportedJsonBody } from '../errors.js';
import { describeValidationErrors } from './validation-messages.js';

const FASTIFY_STATUS: Record<string, number> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 413,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 415,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 400,
  FST_ERR_CTP_EMPTY_JSON_BODY: 400,
  FST_ERR_CTP_INVALID_JSON_BODY: 400,
};

export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error instanceof ServiceError) {
    if (error.statusCode >= 500) request.log.error({ err: error }, error.message);
    void reply.status(error.statusCode).send(errorBody(error.statusCode, error.message));
    return;
  }
  if (error.validation) {
    void reply.status(400).send(errorBody(400, describeValidationErrors(error.validation, error.validationContext)));
    return;
  }
  const status = (error.code && FASTIFY_STATUS[error.code]) ?? (error instanceof SyntaxError ? 400 : undefined);
  if (status) {
    void reply.status(status).send(errorBody(status, clientMessage(error, status, request.routeOptions.bodyLimit)));
    return;
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    void reply.status(error.statusCode).send(errorBody(error.statusCode, error.message));
    return;
  }
  request.log.error({ err: error }, 'unexpected error');
  void reply.status(500).send(errorBody(500, 'internal error; the request id in the log tells what happened'));
}

function clientMessage(error: FastifyError, status: number, bodyLimit: number | undefined): string {
  if (status === 413) return `body: larger than the limit of ${bodyLimit ?? 'the configured'} bytes (NOTIFICATIONS_MAX_BODY)`;
  if (status === 415) return unsupportedJsonBody().message;
  if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return 'body: empty; send a JSON object';
  return `body: not valid JSON (${error.message})`;
}
