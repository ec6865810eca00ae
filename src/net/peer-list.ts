/**
 * Peers named by CIDR blocks (NOTIFICATIONS_TRUSTED_PROXIES, NOTIFICATIONS_RECEIVE_ALLOW), asked
 * about the remote address of a connection.
 */
import { isIP } from 'node:net';
import { blockListOf } from './address-guard.js';

/** The loopback blocks: this host only. */
export const LOOPBACK_CIDRS: readonly string[] = ['127.0.0.0/8', '::1/128'];

export interface PeerList {
  /** False for anything that is not an address (a closed socket has none). */
  includes(address: string | undefined): boolean;
}

export function peerList(cidrs: readonly string[]): PeerList {
  const blocks = blockListOf(cidrs);
  return {
    includes(address) {
      const unscoped = address?.split('%')[0] ?? '';
      const family = isIP(unscoped);
      // A server listening on `::` sees a peer that came over IPv4 as IPv4-mapped
      // (`::ffff:127.0.0.1`); BlockList judges that by the IPv4 blocks, so 127.0.0.0/8 covers
      // it whichever address the server listens on (test/net/peer-list.test.ts holds Node to it).
      return family !== 0 && blocks.check(unscoped, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

const LOOPBACK = peerList(LOOPBACK_CIDRS);

/**
 * Whether a server listening on `host` (NOTIFICATIONS_ADDRESS) can be reached from this host
 * only: a loopback address or `localhost`. Any other name may resolve beyond it, and the
 * unspecified addresses (`0.0.0.0`, `::`) take every interface.
 */
export function listensOnLoopbackOnly(host: string): boolean {
  return host.toLowerCase() === 'localhost' || LOOPBACK.includes(host);
}
