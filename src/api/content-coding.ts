/**
 * Request bodies are taken as sent: a content coding (gzip, br, …) is refused rather than
 * decoded, with 415 and `Accept-Encoding: identity` saying what would do (RFC 9110 15.5.16).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { serviceError } from '../errors.js';

export function refuseContentCoding(request: FastifyRequest, reply: FastifyReply): void {
  const coding = request.headers['content-encoding']?.trim();
  if (coding === undefined || coding === '' || coding.toLowerCase() === 'identity') return;
  void reply.header('accept-encoding', 'identity');
  throw serviceError('CONTENT_ENCODING_UNSUPPORTED', coding);
}
