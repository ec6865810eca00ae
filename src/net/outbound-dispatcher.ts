/**
 * The undici dispatchers of outbound HTTP: to a target (deliveries, the consent handshake, token
 * endpoints) or to the policy service, direct or through the egress proxy.
 *
 * Through the proxy the address guard still holds: the service resolves the target's name
 * itself, drops refused addresses as it does when connecting directly, and asks the proxy for a
 * tunnel to the checked address, never the name (`CONNECT 203.0.113.5:443`), for https and http
 * targets alike. TLS (SNI, certificate verification) and the `Host` header keep the name. An
 * absolute-form request (`POST http://203.0.113.5/hook`) could not do both: a proxy replaces
 * `Host` with the request line's authority (RFC 9112, section 3.2.2), so a name-based virtual
 * host would get the address, and naming the host instead would let the proxy resolve it anew.
 * The proxy's own address is the operator's: it is not judged.
 */
import { STATUS_CODES } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { buildConnector, type Dispatcher, Pool } from 'undici';
import { type AddressGuard, TargetDeniedError } from './address-guard.js';
import { type ClientTls, tlsConnectOptions } from './client-tls.js';
import { type EgressChoice, type EgressProxy, type EgressSettings, egressChoice } from './egress-proxy.js';
import { describeNetworkError, EgressProxyError } from './network-error.js';

export interface OutboundTarget {
  /** `http(s)://host:port`: every request of the dispatcher goes there. */
  readonly origin: string;
  /** Presented to the target directly or through the proxy's tunnel alike. */
  readonly tls?: ClientTls;
  /** Connections at most (kept alive and reused); unset: as many as requests need. */
  readonly connections?: number;
}

export interface OutboundDispatchers {
  /** A new dispatcher for `target`'s origin, which its caller closes; requests name only a path. */
  outboundDispatcher(target: OutboundTarget): Dispatcher;
  /** Closes the connections to the proxies (the dispatchers made are closed by their callers). */
  close(): Promise<void>;
}

export interface OutboundDispatchersOptions {
  /** Connecting (to the proxy, through its tunnel, the TLS handshake) and each wait for an answer. */
  readonly timeoutMs: number;
  /** Judges each address connected to or asked of the proxy; null for the operator's own services. */
  readonly guard: AddressGuard | null;
  readonly egress: EgressSettings;
}

export function outboundDispatchers(options: OutboundDispatchersOptions): OutboundDispatchers {
  const { timeoutMs, guard } = options;
  const choose: EgressChoice = egressChoice(options.egress);
  // One pool per proxy for the CONNECTs: a tunnel takes its connection over, so none is reused.
  const tunnels = new Map<string, Pool>();
  const timeouts = { headersTimeout: timeoutMs, bodyTimeout: timeoutMs };

  function tunnelPool(proxy: EgressProxy): Pool {
    let pool = tunnels.get(proxy.origin);
    if (!pool) {
      pool = new Pool(proxy.origin, { connect: { timeout: timeoutMs }, ...timeouts });
      tunnels.set(proxy.origin, pool);
    }
    return pool;
  }

  function outboundDispatcher(target: OutboundTarget): Dispatcher {
    const origin = new URL(target.origin);
    const proxy = choose(origin);
    const connections = target.connections ?? null;
    const tls = tlsConnectOptions(target.tls);
    if (proxy === null) {
      // The guard judges the address each connection is made to, after DNS.
      const lookup = guard === null ? {} : { lookup: guard.lookup };
      return new Pool(origin.origin, { connections, connect: { ...lookup, timeout: timeoutMs, ...tls }, ...timeouts });
    }
    const overTunnel = origin.protocol === 'https:' ? buildConnector({ timeout: timeoutMs, ...tls }) : undefined;
    return new Pool(origin.origin, { connections, connect: tunnelConnector(proxy, tunnelPool(proxy), overTunnel), ...timeouts });
  }

  /** Opens a tunnel through the proxy to the checked address of the host undici connects to; for https, then TLS in it. */
  function tunnelConnector(
    proxy: EgressProxy,
    proxyPool: Pool,
    tlsConnect: buildConnector.connector | undefined,
  ): buildConnector.connector {
    return (connection, callback) => {
      checkedAddress(connection.hostname, (error, address) => {
        if (error !== null) return callback(error, null);
        const authority = `${isIP(address) === 6 ? `[${address}]` : address}:${connection.port || (connection.protocol === 'https:' ? 443 : 80)}`;
        const headers: Record<string, string> = { host: authority };
        if (proxy.authorization !== undefined) headers['proxy-authorization'] = proxy.authorization;
        proxyPool.connect({ path: authority, headers }).then(
          ({ statusCode, socket }) => {
            if (statusCode !== 200) {
              socket.on('error', () => undefined).destroy();
              return callback(
                new EgressProxyError(`egress proxy ${proxy.shown} refused CONNECT ${authority}: ${answered(statusCode)}`),
                null,
              );
            }
            // A CONNECT's socket is the net.Socket to the proxy; undici types it as any Duplex.
            if (tlsConnect === undefined) callback(null, socket as Socket);
            else tlsConnect({ ...connection, httpSocket: socket as Socket }, callback);
          },
          (failure: unknown) => callback(unreachable(proxy, failure), null),
        );
      });
    };
  }

  /** The address to ask the proxy for: a permitted address of `hostname` (brackets removed), or itself unchecked without a guard. */
  function checkedAddress(hostname: string, callback: (error: Error | null, address: string) => void): void {
    const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    const family = isIP(host);
    if (guard === null) return callback(null, host);
    if (family === 4 || family === 6) {
      // Node's lookup skips IP literals: judged here as a direct connection's caller judges them.
      const refusal = guard.refusal(host, family);
      return callback(refusal === null ? null : new TargetDeniedError(refusal), host);
    }
    guard.lookup(host, {}, (error, address) => callback(error, typeof address === 'string' ? address : ''));
  }

  async function close(): Promise<void> {
    await Promise.all([...tunnels.values()].map((pool) => pool.close()));
    tunnels.clear();
  }

  return { outboundDispatcher, close };
}

function answered(status: number): string {
  const phrase = STATUS_CODES[status];
  return `answered ${status}${phrase === undefined ? '' : ` ${phrase}`}`;
}

function unreachable(proxy: EgressProxy, failure: unknown): EgressProxyError {
  return new EgressProxyError(`egress proxy ${proxy.shown} could not be reached: ${describeNetworkError(failure).message}`, {
    cause: failure,
  });
}
