/**
 * A forward HTTP proxy on 127.0.0.1, as an institution's egress proxy: absolute-form requests
 * (`POST http://127.0.0.1:8080/hook`) are forwarded with `Host` made the request line's authority,
 * as RFC 9112 (section 3.2.2) has a proxy do; `CONNECT 127.0.0.1:8443` opens a tunnel. It
 * records each request line and whether Proxy-Authorization came, and can refuse every request
 * (403, 407). It reaches 127.0.0.1 only: any other destination is answered 502.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, request as httpRequest } from 'node:http';
import { type AddressInfo, connect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

export interface ProxiedRequest {
  readonly method: string;
  /** As written in the request line: `127.0.0.1:8443` for CONNECT, an absolute URL otherwise. */
  readonly target: string;
  /** The Proxy-Authorization header, if one came. */
  readonly proxyAuthorization: string | undefined;
  /** The Host header the proxy was sent. */
  readonly host: string | undefined;
}

export interface ForwardProxy {
  /** http://127.0.0.1:<port> */
  readonly origin: string;
  readonly port: number;
  readonly seen: ProxiedRequest[];
  /** Answer every request with this status from now on (403, 407), or forward again (null). */
  refuse(status: 403 | 407 | null): void;
  close(): Promise<void>;
}

const ONLY_LOOPBACK = '127.0.0.1';

export async function startForwardProxy(): Promise<ForwardProxy> {
  const seen: ProxiedRequest[] = [];
  const tunnels = new Set<Socket | Duplex>();
  let refusal: 403 | 407 | null = null;

  const record = (request: IncomingMessage) =>
    seen.push({
      method: request.method ?? '',
      target: request.url ?? '',
      proxyAuthorization: request.headers['proxy-authorization'],
      host: request.headers.host,
    });

  const server = createServer((request, response) => {
    record(request);
    if (refusal !== null) {
      response.writeHead(refusal, refusal === 407 ? { 'proxy-authenticate': 'Basic realm="egress"' } : {}).end();
      return;
    }
    const url = URL.canParse(request.url ?? '') ? new URL(request.url ?? '') : null;
    if (url === null || url.protocol !== 'http:' || url.hostname !== ONLY_LOOPBACK) {
      response.writeHead(502).end('this test proxy reaches http://127.0.0.1 only');
      return;
    }
    const headers: IncomingHttpHeaders = { ...request.headers, host: url.host };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const upstream = httpRequest(
      { host: url.hostname, port: url.port || 80, method: request.method, path: `${url.pathname}${url.search}`, headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.writeHead(502).end());
    request.pipe(upstream);
  });

  server.on('connect', (request: IncomingMessage, client: Duplex, head: Buffer) => {
    record(request);
    tunnels.add(client);
    client.on('error', () => undefined);
    client.on('close', () => tunnels.delete(client));
    const [host = '', port = ''] = (request.url ?? '').split(/:(?=\d+$)/);
    if (refusal !== null) {
      const extra = refusal === 407 ? 'Proxy-Authenticate: Basic realm="egress"\r\n' : '';
      client.end(
        `HTTP/1.1 ${refusal} ${refusal === 407 ? 'Proxy Authentication Required' : 'Forbidden'}\r\n${extra}Content-Length: 0\r\n\r\n`,
      );
      return;
    }
    if (host !== ONLY_LOOPBACK || isIP(host) !== 4) {
      client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const upstream = connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    tunnels.add(upstream);
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => {
      tunnels.delete(upstream);
      client.destroy();
    });
    client.on('close', () => upstream.destroy());
  });

  await new Promise<void>((resolve) => server.listen(0, ONLY_LOOPBACK, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${ONLY_LOOPBACK}:${port}`,
    port,
    seen,
    refuse: (status) => {
      refusal = status;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of tunnels) socket.destroy();
      }),
  };
}
