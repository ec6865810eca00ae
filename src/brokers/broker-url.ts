/**
 * Reading a broker target URL: what every protocol's URL has (its scheme, a host, perhaps a port;
 * no credentials, no fragment), then the protocol's own path and query. The same reading decides
 * at a subscription's write (its problems are 400s naming `body.target_url`) and at each delivery
 * (its lane, where the publisher connects, where the message goes). Which protocol a URL names is
 * the destination kinds' to say (destinations/kinds.ts).
 */
import { isIP } from 'node:net';
import { type BrokerProtocol, type BrokerRoute, BrokerUrlError } from './protocol.js';

export interface BrokerUrl {
  readonly protocol: BrokerProtocol;
  /** As written, lower-cased, without the brackets of an IPv6 literal. */
  readonly hostname: string;
  readonly port: number;
  readonly scope: string;
  readonly route: BrokerRoute;
  /** `scheme://host:port`: the delivery lane, as an HTTP target's origin is. */
  readonly lane: string;
}

/** A host name, or an IPv4 literal (an IPv6 one is in brackets). */
const HOST_NAME = /^[a-z0-9_.-]+$/i;

/** `text`, whose scheme is the protocol's, read; throws BrokerUrlError saying what is wrong (for `body.target_url: …`). */
export function readBrokerUrl(text: string, protocol: BrokerProtocol): BrokerUrl {
  const example = `write it as ${protocol.form}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new BrokerUrlError(`is not a URL: ${example}`);
  }
  if (!text.slice(protocol.scheme.length + 1).startsWith('//') || url.hostname === '')
    throw new BrokerUrlError(`names no host: ${example}`);
  if (url.username !== '' || url.password !== '') throw new BrokerUrlError('must not contain credentials; put them in auth (basic)');
  if (url.hash !== '' || text.includes('#')) throw new BrokerUrlError('must not contain a fragment (#); write a # of a name or key as %23');
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!(url.hostname.startsWith('[') ? isIP(hostname) === 6 : HOST_NAME.test(hostname)))
    throw new BrokerUrlError(`the host "${url.hostname}" is not a host name or an IP address`);
  const port = url.port === '' ? protocol.defaultPort : Number(url.port);
  if (port < 1) throw new BrokerUrlError('the port must be from 1 to 65535');
  const { scope, route } = protocol.read(url);
  const host = url.hostname.toLowerCase();
  return { protocol, hostname: hostname.toLowerCase(), port, scope, route, lane: `${protocol.scheme}://${host}:${port}` };
}
