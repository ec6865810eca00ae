/**
 * The error catalogue: every error the service answers with, its HTTP status and its JSON
 * shape `{"statusCode": 400, "error": "Bad Request", "message": "..."}`. Messages name the
 * field at fault and, where there is one, what to do next.
 */
import { STATUS_CODES } from 'node:http';

export type ErrorKind = 'bad-request' | 'unauthenticated' | 'not-found' | 'too-large' | 'unsupported-media-type' | 'unavailable' | 'internal';

const STATUS: Record<ErrorKind, number> = {
  'bad-request': 400,
  unauthenticated: 401,
  'not-found': 404,
  'too-large': 413,
  'unsupported-media-type': 415,
  unavailable: 503,
  internal: 500,
};

export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly statusCode: number;

  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Sent as Retry-After: when asking again may succeed. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.statusCode = STATUS[kind];
  }
}

export const badRequest = (message: string) => new ServiceError('bad-request', message);
export const notFound = (message: string) => new ServiceError('not-found', message);
/** Missing, deleted, malformed or someone else's: the same answer, so nothing is revealed. */
export const subscriptionNotFound = (uuid: string) => notFound(`subscription ${uuid} not found`);
/**
 * The database did not answer within NOTIFICATIONS_DATABASE_TIMEOUT, or is not reachable: the
 * request may be sent again, after about as long.
 */
export const databaseUnavailable = (timeoutMs: number) =>
  new ServiceError('unavailable', `database: unavailable, or no answer within ${timeoutMs / 1000} s; try again later`, Math.max(1, Math.ceil(timeoutMs / 1000)));
export const unsupportedJsonBody = () => new ServiceError('unsupported-media-type', 'body: unsupported Content-Type; send application/json');

export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
}

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message };
}
