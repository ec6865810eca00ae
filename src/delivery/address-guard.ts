import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** A target address refused by NOTIFICATIONS_TARGET_DENY or NOTIFICATIONS_TARGET_ALLOW. */
export class TargetDeniedError extends Error {
  readonly code = 'ETARGETDENIED';
  constructor(message: string) {
    super(message);
    this.name = 'TargetDeniedError';
  }
}

export interface AddressGuard {
  permits(address: string, family: 4 | 6): boolean;
  /** Why the address is refused ("address … is denied by …"), or null when it is permitted. */
  refusal(address: string, family: 4 | 6): string | null;
  /**
   * For undici's `connect: { lookup }`: resolves like dns.lookup but drops refused
   * addresses, and fails with a TargetDeniedError when none is left. The check is
   * on the address actually connected to, so a name that re-resolves to a denied
   * address between validation and delivery (DNS rebinding) is still refused.
   * Node skips `lookup` for IP literals: check those with `refusal` first.
   */
  readonly lookup: LookupFunction;
}

export interface AddressRules {
  /** CIDR blocks (`10.0.0.0/8`, `fd00::/8`; no prefix: one address). Empty: any address not denied. */
  readonly allow: readonly string[];
  /** CIDR blocks; deny wins over allow. */
  readonly deny: readonly string[];
}

/** dns.lookup with `all: true`; replaceable so tests can play a rebinding DNS server. */
export type ResolveAll = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

export function addressGuard(rules: AddressRules, resolveAll: ResolveAll = dnsLookup): AddressGuard {
  const allowed = blockListOf(rules.allow);
  const denied = blockListOf(rules.deny);
  const mustBeAllowed = rules.allow.length > 0;

  function refusal(address: string, family: 4 | 6): string | null {
    const unscoped = address.split('%')[0] ?? '';
    if (isIP(unscoped) !== family) return `address ${address} is not an IPv${family} address`;
    const judged = family === 6 ? unmapIpv4(unscoped) : unscoped;
    const type = isIP(judged) === 4 ? 'ipv4' : 'ipv6';
    if (denied.check(judged, type)) return `address ${judged} is denied by NOTIFICATIONS_TARGET_DENY`;
    if (mustBeAllowed && !allowed.check(judged, type)) return `address ${judged} is not in NOTIFICATIONS_TARGET_ALLOW`;
    return null;
  }

  const lookup: LookupFunction = (hostname, options, callback) => {
    resolveAll(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const refusals: string[] = [];
      const permitted = addresses.filter(({ address, family }) => {
        const why = refusal(address, family === 4 ? 4 : 6);
        if (why !== null) refusals.push(why);
        return why === null;
      });
      const first = permitted[0];
      if (first === undefined) {
        if (refusals.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND', hostname }), '');
        return callback(new TargetDeniedError(`every address of ${hostname} is refused: ${refusals.join('; ')}`), '');
      }
      if (options.all) return callback(null, permitted);
      return callback(null, first.address, first.family);
    });
  };

  return { permits: (address, family) => refusal(address, family) === null, refusal, lookup };
}

function blockListOf(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network = '', prefix] = cidr.split('/');
    const family = isIP(network);
    if (family === 0) throw new TypeError(`not a CIDR block: ${cidr}`);
    list.addSubnet(network, prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/**
 * `::ffff:169.254.169.254` (in any spelling) is a socket to 169.254.169.254, so
 * it is judged by the IPv4 rules; any other IPv6 address is returned as given.
 */
function unmapIpv4(address: string): string {
  // The URL parser writes every IPv6 spelling in one canonical form: [::ffff:a9fe:a9fe].
  const canonical = new URL(`http://[${address}]/`).hostname;
  const mapped = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(canonical);
  if (!mapped) return address;
  const high = parseInt(mapped[1] ?? '', 16);
  const low = parseInt(mapped[2] ?? '', 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}
