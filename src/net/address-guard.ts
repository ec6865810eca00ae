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
  /**
   * What delivery would decide about `host` (a URL's hostname), asked before any delivery (at
   * create and PUT): an IP literal is judged as `refusal` judges it; a name by every address it
   * resolves to, refused only when all of them are (delivery drops refused addresses and
   * connects to a permitted one). null when delivery would go ahead, and also when the name
   * does not resolve, not within `timeoutMs`, or while MAX_PENDING_LOOKUPS earlier lookups are
   * still out: delivery judges the name again when it connects.
   */
  hostRefusal(host: string, timeoutMs: number): Promise<string | null>;
}

/**
 * What the guard says of a URL whose host is an IP literal (`127.0.0.1`, `[::1]`), which Node
 * connects to without calling `lookup`; null for a permitted literal and for any host name.
 */
export function literalRefusal(url: URL, guard: AddressGuard): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const family = isIP(host);
  return family === 4 || family === 6 ? guard.refusal(host, family) : null;
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

/**
 * Lookups of `hostRefusal` that may be out at once. dns.lookup holds a thread of libuv's pool
 * (4 by default, shared with the outbound worker's own lookups, files and crypto) until the
 * resolver answers, long after `timeoutMs` has let the request go: with at most 2 of them, names
 * that resolve slowly cannot take the pool from deliveries. Beyond that a name is not looked up
 * in advance (delivery still judges it).
 */
export const MAX_PENDING_LOOKUPS = 2;

export function addressGuard(rules: AddressRules, resolveAll: ResolveAll = dnsLookup): AddressGuard {
  const allowed = blockListOf(rules.allow);
  const denied = blockListOf(rules.deny);
  const mustBeAllowed = rules.allow.length > 0;
  let pendingLookups = 0;

  function refusal(address: string, family: 4 | 6): string | null {
    const unscoped = address.split('%')[0] ?? '';
    if (isIP(unscoped) !== family) return `address ${address} is not an IPv${family} address`;
    const ipv4 = family === 6 ? embeddedIpv4(unscoped) : null;
    if (ipv4 === null) {
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (denied.check(unscoped, type)) return `address ${unscoped} is denied by NOTIFICATIONS_TARGET_DENY`;
      if (mustBeAllowed && !allowed.check(unscoped, type)) return `address ${unscoped} is not in NOTIFICATIONS_TARGET_ALLOW`;
      return null;
    }
    // The IPv4 host is what is reached, so the IPv4 rules judge it, whatever the IPv6 blocks
    // say; a block of the IPv6 form itself (deny 64:ff9b::/96: no NAT64) is obeyed as well. In
    // an allow list either form will do: 10.0.0.0/8 lets 64:ff9b::10.1.2.3 reach 10.1.2.3, and
    // 64:ff9b::/96 lets every IPv4 host that is not denied be reached through NAT64.
    if (denied.check(ipv4, 'ipv4')) return `address ${ipv4} is denied by NOTIFICATIONS_TARGET_DENY`;
    if (denied.check(unscoped, 'ipv6')) return `address ${unscoped} is denied by NOTIFICATIONS_TARGET_DENY`;
    if (mustBeAllowed && !allowed.check(ipv4, 'ipv4') && !allowed.check(unscoped, 'ipv6'))
      return `address ${ipv4} is not in NOTIFICATIONS_TARGET_ALLOW`;
    return null;
  }

  /** The permitted addresses of a resolution, and why the others are refused. */
  function judged(addresses: readonly LookupAddress[]): { permitted: LookupAddress[]; refusals: string[] } {
    const refusals: string[] = [];
    const permitted = addresses.filter(({ address, family }) => {
      const why = refusal(address, family === 4 ? 4 : 6);
      if (why !== null) refusals.push(why);
      return why === null;
    });
    return { permitted, refusals };
  }

  const everyAddressRefused = (hostname: string, refusals: readonly string[]) =>
    `every address of ${hostname} is refused: ${refusals.join('; ')}`;

  const lookup: LookupFunction = (hostname, options, callback) => {
    resolveAll(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const { permitted, refusals } = judged(addresses);
      const first = permitted[0];
      if (first === undefined) {
        if (refusals.length === 0)
          return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND', hostname }), '');
        return callback(new TargetDeniedError(everyAddressRefused(hostname, refusals)), '');
      }
      if (options.all) return callback(null, permitted);
      return callback(null, first.address, first.family);
    });
  };

  function hostRefusal(host: string, timeoutMs: number): Promise<string | null> {
    const literal = host.startsWith('[') ? host.slice(1, -1) : host;
    const family = isIP(literal);
    if (family === 4 || family === 6) return Promise.resolve(refusal(literal, family));
    if (pendingLookups >= MAX_PENDING_LOOKUPS) return Promise.resolve(null);
    pendingLookups++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(null), timeoutMs);
      resolveAll(host, { all: true }, (error, addresses) => {
        pendingLookups--;
        clearTimeout(timer);
        const { permitted, refusals } = error ? { permitted: [], refusals: [] } : judged(addresses);
        resolve(permitted.length === 0 && refusals.length > 0 ? everyAddressRefused(host, refusals) : null);
      });
    });
  }

  return { permits: (address, family) => refusal(address, family) === null, refusal, lookup, hostRefusal };
}

/** CIDR blocks (`10.0.0.0/8`; no prefix: one address) as one BlockList. */
export function blockListOf(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network = '', prefix] = cidr.split('/');
    const family = isIP(network);
    if (family === 0) throw new TypeError(`not a CIDR block: ${cidr}`);
    list.addSubnet(network, prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** The first 96 bits of ::ffff:0:0/96 and 64:ff9b::/96, as 16-bit groups. */
const IPV4_MAPPED_PREFIX = [0, 0, 0, 0, 0, 0xffff];
const NAT64_WELL_KNOWN_PREFIX = [0x64, 0xff9b, 0, 0, 0, 0];

/**
 * The IPv4 address an IPv6 address stands for, in any spelling, or null: IPv4-mapped
 * (`::ffff:169.254.169.254`, a socket to 169.254.169.254) and NAT64 in the well-known prefix
 * of RFC 6052 (`64:ff9b::a9fe:a9fe`, which a NAT64 gateway translates to 169.254.169.254).
 */
function embeddedIpv4(address: string): string | null {
  const groups = ipv6Groups(address);
  const prefixed = (prefix: readonly number[]) => prefix.every((group, i) => groups[i] === group);
  if (!prefixed(IPV4_MAPPED_PREFIX) && !prefixed(NAT64_WELL_KNOWN_PREFIX)) return null;
  const [high = 0, low = 0] = groups.slice(6);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** The eight 16-bit groups of a valid IPv6 address. */
function ipv6Groups(address: string): number[] {
  // The URL parser writes every spelling (dotted quad included) in one canonical form, [64:ff9b::a9fe:a9fe].
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16));
}
