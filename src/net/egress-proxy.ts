/**
 * Which egress proxy, if any, carries a request: NOTIFICATIONS_EGRESS_PROXY (or HTTPS_PROXY and
 * HTTP_PROXY, by the target's scheme), unless the target matches an entry of the NO_PROXY list.
 * The settings are plain data so that they can be handed to the outbound worker thread.
 */
import { BlockList, isIP } from 'node:net';

export interface EgressSettings {
  /** The proxy of http:// targets; null: direct. */
  readonly httpProxy: string | null;
  /** The proxy of https:// targets; null: direct. */
  readonly httpsProxy: string | null;
  /** Entries (each accepted by `noProxyEntry`) of the targets that are reached directly. */
  readonly noProxy: readonly string[];
}

export const NO_EGRESS_PROXY: EgressSettings = Object.freeze({ httpProxy: null, httpsProxy: null, noProxy: Object.freeze([]) });

export interface EgressProxy {
  /** `http://host:port`, what is connected to. */
  readonly origin: string;
  readonly hostname: string;
  readonly port: number;
  /** How messages name the proxy: its origin, without the credentials of its URL. */
  readonly shown: string;
  /** The Proxy-Authorization header (Basic) of the URL's user and password; undefined without them. */
  readonly authorization: string | undefined;
}

/** Why `raw` cannot be an egress proxy URL, or null when it can. */
export function proxyUrlProblem(raw: string): string | null {
  if (!URL.canParse(raw)) return 'is not an absolute URL (http://host:port)';
  const url = new URL(raw);
  if (url.protocol !== 'http:') return `is not an http:// proxy URL (${url.protocol}// is not supported)`;
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') return 'has a path, query or fragment (write http://host:port only)';
  return null;
}

/** Throws a TypeError naming the problem; see `proxyUrlProblem`. */
export function egressProxy(raw: string): EgressProxy {
  const problem = proxyUrlProblem(raw);
  // Not quoted: it may hold a password.
  if (problem !== null) throw new TypeError(`the egress proxy URL ${problem}`);
  const url = new URL(raw);
  const credentials = url.username === '' && url.password === '' ? undefined : `${decode(url.username)}:${decode(url.password)}`;
  return {
    origin: url.origin,
    hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
    port: Number(url.port || 80),
    shown: url.origin,
    authorization: credentials === undefined ? undefined : `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`,
  };
}

function decode(component: string): string {
  try {
    return decodeURIComponent(component);
  } catch {
    return component;
  }
}

/** One NO_PROXY entry, ready to be matched. */
type NoProxyEntry =
  | { kind: 'any' }
  | { kind: 'block'; list: BlockList }
  | { kind: 'address'; address: string; port: number | null }
  /** `example.org` matches that host and its subdomains; `.example.org` and `*.example.org` only the subdomains. */
  | { kind: 'name'; name: string; subdomainsOnly: boolean; port: number | null };

const NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;
const ENTRY_FORMS = 'a host name, .domain, an IP address or CIDR block, optionally with :port, or *';

/**
 * Parses one NO_PROXY entry: `*`; a CIDR block (`10.0.0.0/8`, `fd00::/8`); an IP address
 * (`10.1.2.3`, `::1`, `[::1]`); a name (`hooks.example.org`), or a domain's subdomains
 * (`.example.org`, `*.example.org`); an address or name may end in `:port`. Throws a TypeError
 * whose message completes `"<entry>" …`.
 */
export function noProxyEntry(raw: string): NoProxyEntry {
  const entry = raw.trim().toLowerCase();
  if (entry === '*') return { kind: 'any' };
  if (entry.includes('/')) {
    const [network = '', prefixText = ''] = entry.split('/');
    const family = isIP(network);
    if (family === 0) throw new TypeError(`is not ${ENTRY_FORMS}`);
    const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (!(prefix <= (family === 4 ? 32 : 128))) throw new TypeError(`is not a CIDR block (${ENTRY_FORMS})`);
    const list = new BlockList();
    list.addSubnet(network, prefix, family === 4 ? 'ipv4' : 'ipv6');
    return { kind: 'block', list };
  }
  if (isIP(entry) === 6) return { kind: 'address', address: entry, port: null };
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  const [host = '', portText] = bracketed ? bracketed.slice(1) : entry.split(/:(?=\d+$)/);
  const port = portText === undefined ? null : Number(portText);
  if (port !== null && !(port >= 1 && port <= 65535)) throw new TypeError(`has a port outside 1 to 65535 (${ENTRY_FORMS})`);
  if (isIP(host) !== 0) return { kind: 'address', address: host, port };
  if (bracketed) throw new TypeError(`is not an IPv6 address in brackets (${ENTRY_FORMS})`);
  const subdomainsOnly = host.startsWith('.') || host.startsWith('*.');
  const name = host.replace(/^\*?\./, '').replace(/\.$/, '');
  if (!NAME.test(name)) throw new TypeError(`is not ${ENTRY_FORMS}`);
  return { kind: 'name', name, subdomainsOnly, port };
}

/** Decides, per target URL, which proxy carries a request to it. */
export type EgressChoice = (target: URL) => EgressProxy | null;

/** Throws a TypeError for a proxy URL or entry that the configuration should have refused. */
export function egressChoice(settings: EgressSettings): EgressChoice {
  const http = settings.httpProxy === null ? null : egressProxy(settings.httpProxy);
  const https = settings.httpsProxy === null ? null : egressProxy(settings.httpsProxy);
  const direct = settings.noProxy.map(noProxyEntry);
  return (target) => {
    const proxy = target.protocol === 'https:' ? https : target.protocol === 'http:' ? http : null;
    if (proxy === null) return null;
    const host = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname.replace(/\.$/, '');
    const port = Number(target.port || (target.protocol === 'https:' ? 443 : 80));
    return direct.some((entry) => matches(entry, host, port)) ? null : proxy;
  };
}

function matches(entry: NoProxyEntry, host: string, port: number): boolean {
  const family = isIP(host);
  switch (entry.kind) {
    case 'any':
      return true;
    case 'block':
      // Names are not resolved to be matched: a CIDR block matches targets written as addresses.
      return family !== 0 && entry.list.check(host, family === 4 ? 'ipv4' : 'ipv6');
    case 'address':
      return family !== 0 && sameAddress(entry.address, host) && (entry.port === null || entry.port === port);
    case 'name': {
      if (family !== 0 || (entry.port !== null && entry.port !== port)) return false;
      if (host.endsWith(`.${entry.name}`)) return true;
      return !entry.subdomainsOnly && host === entry.name;
    }
  }
}

/** IPv6 addresses have many spellings (`::1`, `0:0::1`): compared through a one-address list. */
function sameAddress(a: string, b: string): boolean {
  const family = isIP(a);
  if (family !== isIP(b)) return false;
  const list = new BlockList();
  list.addAddress(a, family === 4 ? 'ipv4' : 'ipv6');
  return list.check(b, family === 4 ? 'ipv4' : 'ipv6');
}
