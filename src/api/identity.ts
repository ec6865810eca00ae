/**
 * The acting user: the value of the identity header that the trusted front proxy sets, or the
 * configured default user (compatibility mode) when a request has none. Either is believed
 * only on a connection from a trusted proxy (NOTIFICATIONS_TRUSTED_PROXIES): from any other
 * peer the header is anyone's word, and the default user would hand out an identity to all.
 */
import type { FastifyRequest } from 'fastify';
import { serviceError } from '../errors.js';
import { LOOPBACK_CIDRS, type PeerList, peerList } from '../net/peer-list.js';

export interface IdentityOptions {
  /** Lower-cased header name, e.g. `http-remote-user`. */
  header: string;
  /** null: a request without the header is answered 401. */
  defaultUser: string | null;
  /** The peers whose identity header (and default user) is believed; default: loopback only. */
  trustedProxies?: PeerList;
}

const LOOPBACK_ONLY = peerList(LOOPBACK_CIDRS);

export function actingUser(request: FastifyRequest, options: IdentityOptions): string {
  const copies = occurrences(request.raw.rawHeaders, options.header);
  const peer = request.socket.remoteAddress;
  if (!(options.trustedProxies ?? LOOPBACK_ONLY).includes(peer)) {
    if (copies > 0) throw serviceError('IDENTITY_UNTRUSTED', displayName(options.header), peer ?? 'a closed connection');
    throw serviceError(
      'UNAUTHENTICATED',
      'missing identity',
      `send the request through the front proxy, which sets the ${displayName(options.header)} header`,
    );
  }
  const value = request.headers[options.header];
  // Two copies of the header mean the proxy appended to a client's own instead of replacing it;
  // Node would join them into "a, b", which must not pass for a user name.
  if (Array.isArray(value) || copies > 1) {
    throw serviceError('IDENTITY_HEADER_REPEATED', displayName(options.header));
  }
  const user = value?.trim() ?? '';
  if (user !== '') return user;
  if (options.defaultUser !== null) return options.defaultUser;
  throw serviceError('UNAUTHENTICATED', 'missing identity', `the ${displayName(options.header)} header is required`);
}

function occurrences(rawHeaders: string[], name: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === name) count++;
  return count;
}

/** `http-remote-user` → `Http-Remote-User`, as people write header names. */
function displayName(header: string): string {
  return header.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());
}
