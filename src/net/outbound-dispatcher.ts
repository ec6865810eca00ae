/**
 * The undici dispatchers of outbound HTTP: to a target (deliveries, the consent handshake) or to
 * the policy service, direct or through the egress proxy.
 *
 * Through the proxy the address guard still holds: the service resolves the target's name
 * itself, drops refused addresses as it does when connecting directly, and asks the proxy for
 * the checked address, never the name (`CONNECT 203.0.113.5:443` for https, an absolute-form
 * `POST http://203.0.113.5:8080/path` for http). TLS (SNI, certificate verification) and the
 * `Host` header keep the name. The proxy's own address is the operator's: it is not judged.
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
    if (origin.protocol === 'https:') {
      const connect = tunnelConnector(proxy, tunnelPool(proxy), buildConnector({ timeout: timeoutMs, ...tls }));
      return new Pool(origin.origin, { connections, connect, ...timeouts });
    }
    return new Pool(origin.origin, { connections, connect: proxyConnector(proxy, timeoutMs), ...timeouts }).compose(absoluteForm(proxy));
  }

  /** Opens a tunnel through the proxy to the checked address of the host undici connects to, then TLS in it. */
  function tunnelConnector(proxy: EgressProxy, proxyPool: Pool, tlsConnect: buildConnector.connector): buildConnector.connector {
    return (connection, callback) => {
      checkedAddress(connection.hostname, (error, address) => {
        if (error !== null) return callback(error, null);
        const authority = `${isIP(address) === 6 ? `[${address}]` : address}:${connection.port || 443}`;
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
            tlsConnect({ ...connection, httpSocket: socket as Socket }, callback);
          },
          (failure: unknown) => callback(unreachable(proxy, failure), null),
        );
      });
    };
  }

  /**
   * The http requests of a pool whose connections go to the proxy: each names the checked
   * address in absolute form, its `Host` the name; a 407 is the proxy's, so it is an error.
   */
  function absoluteForm(proxy: EgressProxy): Dispatcher.DispatcherComposeInterceptor {
    return (dispatch) => (request, handler) => {
      const origin = new URL(String(request.origin));
      // Set by request(): the lookup may take longer than the exchange may.
      const { signal } = request as { signal?: AbortSignal | null };
      checkedAddress(origin.hostname, (error, address) => {
        if (signal?.aborted) return handler.onResponseError?.(null as never, signal.reason as Error);
        if (error !== null) return handler.onResponseError?.(null as never, error);
        const authority = `${isIP(address) === 6 ? `[${address}]` : address}:${origin.port || 80}`;
        const headers: Record<string, string | string[] | undefined> = { ...headerRecord(request.headers), host: origin.host };
        if (proxy.authorization !== undefined) headers['proxy-authorization'] = proxy.authorization;
        dispatch({ ...request, path: `http://${authority}${request.path}`, headers }, new ProxyAnswers(handler, proxy));
      });
      return true;
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

/** Connects to the proxy whatever the origin of the pool: its requests are absolute-form. */
function proxyConnector(proxy: EgressProxy, timeoutMs: number): buildConnector.connector {
  const connect = buildConnector({ timeout: timeoutMs });
  const at = { hostname: proxy.hostname, host: `${proxy.hostname}:${proxy.port}`, protocol: 'http:', port: String(proxy.port) };
  return (connection, callback) => {
    const { servername: _ignored, ...rest } = connection;
    connect({ ...rest, ...at }, (error, socket) => {
      if (error !== null) callback(unreachable(proxy, error), null);
      else callback(null, socket);
    });
  };
}

/** Passes everything on to `handler`, except the proxy's own 407, which is an error naming it. */
class ProxyAnswers implements Dispatcher.DispatchHandler {
  constructor(
    private readonly handler: Dispatcher.DispatchHandler,
    private readonly proxy: EgressProxy,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.handler.onRequestStart?.(controller, context);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
    statusMessage?: string,
  ): void {
    if (statusCode === 407) return controller.abort(new EgressProxyError(`egress proxy ${this.proxy.shown} refused: ${answered(407)}`));
    this.handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.handler.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: Record<string, string | string[] | undefined>): void {
    this.handler.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.handler.onResponseError?.(controller, error);
  }
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

function headerRecord(headers: Dispatcher.DispatchOptions['headers']): Record<string, string | string[] | undefined> {
  if (headers === null || headers === undefined) return {};
  if (Array.isArray(headers)) {
    const record: Record<string, string> = {};
    for (let i = 0; i + 1 < headers.length; i += 2) record[String(headers[i])] = String(headers[i + 1]);
    return record;
  }
  if (Symbol.iterator in headers) return Object.fromEntries(headers as Iterable<[string, string | string[] | undefined]>);
  return { ...(headers as Record<string, string | string[] | undefined>) };
}
