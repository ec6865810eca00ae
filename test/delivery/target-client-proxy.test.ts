/**
 * Deliveries through the egress proxy: a real forward proxy and real HTTP and HTTPS targets on
 * 127.0.0.1, the target's name resolved by the guard's resolver seam. The proxy is asked for
 * the checked address; TLS and Host keep the name; the guard refuses what it refuses without it.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { after, before, describe, it, type TestContext } from 'node:test';
import { getCACertificates, setDefaultCACertificates, type TLSSocket } from 'node:tls';
import { createTargetClient, type TargetRequest } from '../../src/delivery/target-client.js';
import { addressGuard, type ResolveAll } from '../../src/net/address-guard.js';
import type { EgressSettings } from '../../src/net/egress-proxy.js';
import { type ForwardProxy, startForwardProxy } from '../support/forward-proxy.js';
import { startTokenEndpoint, startTokenTarget } from '../support/oauth2-servers.js';
import { CLIENT_NAME, makeTestPki, type TestPki } from '../support/test-pki.js';
import { DEFAULT_TARGET_RULES } from '../support/target-guard.js';
import { type StubServer, startStubServer, unusedPort } from './stub-server.js';

const NAME = 'target.example.test';
const METADATA = 'metadata.example.test';
const EVENT = JSON.stringify({ specversion: '1.0', id: 'e-1', source: '/s', type: 't' });

/** target.example.test is 127.0.0.1; metadata.example.test only the denied 169.254.169.254. */
const resolveAll: ResolveAll = (hostname, _options, callback) => {
  if (hostname === NAME) return callback(null, [{ address: '127.0.0.1', family: 4 }]);
  if (hostname === METADATA) return callback(null, [{ address: '169.254.169.254', family: 4 }]);
  callback(Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND', hostname }), []);
};

interface HttpsTarget {
  readonly port: number;
  readonly seen: Array<{ host: string | undefined; servername: string | false | null; clientCertificate: string | undefined }>;
  close(): Promise<void>;
}

async function startHttpsTarget(certificates: TestPki): Promise<HttpsTarget> {
  const seen: HttpsTarget['seen'] = [];
  const server = createHttpsServer(
    { key: certificates.serverKey, cert: certificates.serverCert, ca: certificates.caCert, requestCert: true, rejectUnauthorized: false },
    (request, response) => {
      const socket = request.socket as TLSSocket;
      const peer = socket.getPeerCertificate();
      seen.push({
        host: request.headers.host,
        servername: socket.servername,
        clientCertificate: socket.authorized && peer.subject ? String(peer.subject.CN) : undefined,
      });
      request.resume().on('end', () => response.writeHead(200).end('ok'));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('target client through the egress proxy', () => {
  let certificates: TestPki;
  let proxy: ForwardProxy;
  let httpTarget: StubServer;
  let httpsTarget: HttpsTarget;

  const defaultRoots = getCACertificates('default');
  before(async () => {
    certificates = makeTestPki([NAME]);
    // The test CA is trusted in this process as an operator's internal CA would be (NODE_EXTRA_CA_CERTS).
    setDefaultCACertificates([...defaultRoots, certificates.caCert]);
    proxy = await startForwardProxy();
    httpTarget = await startStubServer((_request, response) => response.writeHead(200).end('ok'));
    httpsTarget = await startHttpsTarget(certificates);
  });
  after(async () => {
    await Promise.all([proxy.close(), httpTarget.close(), httpsTarget.close()]);
    certificates.remove();
    setDefaultCACertificates(defaultRoots);
  });

  function settings(overrides: Partial<EgressSettings> = {}): EgressSettings {
    const url = new URL(proxy.origin);
    url.username = 'egress';
    url.password = 's3cret';
    return { httpProxy: url.href, httpsProxy: url.href, noProxy: [], ...overrides };
  }

  function client(t: TestContext, egress: EgressSettings | undefined, timeoutMs = 3000) {
    const target = createTargetClient({
      timeoutMs,
      connectionsPerOrigin: 2,
      guard: addressGuard(DEFAULT_TARGET_RULES, resolveAll),
      ...(egress === undefined ? {} : { egress }),
    });
    t.after(() => target.close());
    return target;
  }

  const post = (url: string, extra: Partial<TargetRequest> = {}): TargetRequest => ({ url, auth: {}, body: EVENT, ...extra });
  const clear = () => {
    proxy.seen.length = 0;
    httpTarget.received.length = 0;
    httpsTarget.seen.length = 0;
    proxy.refuse(null);
  };

  it('tunnels an http delivery by CONNECT to the checked address; Host keeps the name', async (t) => {
    clear();
    const response = await client(t, settings()).post(post(`http://${NAME}:${httpTarget.port}/hook?x=1`));
    assert.deepEqual([response.status, response.error], [200, null]);
    assert.equal(proxy.seen.length, 1);
    assert.equal(proxy.seen[0]?.method, 'CONNECT');
    assert.equal(proxy.seen[0]?.target, `127.0.0.1:${httpTarget.port}`);
    assert.equal(httpTarget.received[0]?.url, '/hook?x=1');
    assert.equal(proxy.seen[0]?.proxyAuthorization, `Basic ${Buffer.from('egress:s3cret').toString('base64')}`);
    assert.equal(httpTarget.received[0]?.headers.host, `${NAME}:${httpTarget.port}`);
    assert.equal(httpTarget.received[0]?.headers['proxy-authorization'], undefined);
    assert.equal(httpTarget.received[0]?.body, EVENT);
  });

  it('tunnels an https delivery by CONNECT to the checked address; SNI, certificate and Host keep the name', async (t) => {
    clear();
    const response = await client(t, settings()).post(post(`https://${NAME}:${httpsTarget.port}/hook`));
    assert.deepEqual([response.status, response.error], [200, null]);
    assert.equal(proxy.seen.length, 1);
    assert.deepEqual(
      [proxy.seen[0]?.method, proxy.seen[0]?.target, proxy.seen[0]?.proxyAuthorization !== undefined],
      ['CONNECT', `127.0.0.1:${httpsTarget.port}`, true],
    );
    assert.deepEqual(httpsTarget.seen[0], { host: `${NAME}:${httpsTarget.port}`, servername: NAME, clientCertificate: undefined });
  });

  it('presents a per-target client certificate through the tunnel, and keeps it off other connections', async (t) => {
    clear();
    const target = client(t, settings());
    const url = `https://${NAME}:${httpsTarget.port}/hook`;
    const withCertificate: Partial<TargetRequest> = {
      auth: { type: 'mtls', mtls: { cert: certificates.clientCert, key: certificates.clientKey, ca: certificates.caCert } },
    };
    assert.equal((await target.post(post(url, withCertificate))).status, 200);
    assert.equal((await target.post(post(url))).status, 200);
    assert.deepEqual(
      httpsTarget.seen.map((request) => request.clientCertificate),
      [CLIENT_NAME, undefined],
    );
    assert.deepEqual(
      proxy.seen.map((request) => request.method),
      ['CONNECT', 'CONNECT'],
    );
  });

  it('fails an https target whose certificate is not trusted, as it would directly', async (t) => {
    clear();
    const untrusted = await startHttpsTarget(makeTestPki([NAME]));
    t.after(() => untrusted.close());
    const response = await client(t, settings()).post(post(`https://${NAME}:${untrusted.port}/hook`));
    assert.equal(response.status, null);
    assert.match(response.error ?? '', /^TLS failed: /);
    assert.equal(response.permanent, false);
  });

  it('asks an oauth2 token endpoint through the proxy too, by its checked address', async (t) => {
    clear();
    const endpoint = await startTokenEndpoint({ id: 'pipeline', secret: 'client-secret' });
    const target = await startTokenTarget(endpoint);
    t.after(() => Promise.all([endpoint.close(), target.close()]));
    const tokenUrl = new URL(endpoint.url);
    tokenUrl.hostname = NAME;
    const oauth2 = { token_url: tokenUrl.href, client_id: 'pipeline', client_secret: 'client-secret' };
    const response = await client(t, settings()).post(post(target.url, { auth: { type: 'oauth2', oauth2 } }));
    assert.deepEqual([response.status, response.error], [204, null]);
    assert.equal(endpoint.issued(), 1);
    assert.deepEqual(
      proxy.seen.map((request) => [request.method, request.target]),
      [
        ['CONNECT', `127.0.0.1:${tokenUrl.port}`],
        ['CONNECT', new URL(target.url).host],
      ],
    );
  });

  for (const [form, entry] of [
    ['a host', NAME],
    ['a domain', '.example.test'],
    ['a host and port', `${NAME}:${0}`],
    ['a CIDR block', '127.0.0.0/8'],
  ] as const) {
    it(`goes direct to ${form} in NO_PROXY: the proxy sees nothing`, async (t) => {
      clear();
      const host = form === 'a CIDR block' ? '127.0.0.1' : NAME;
      const noProxy = [entry.replace(':0', `:${httpTarget.port}`)];
      const response = await client(t, settings({ noProxy })).post(post(`http://${host}:${httpTarget.port}/direct`));
      assert.deepEqual([response.status, response.error], [200, null]);
      assert.deepEqual(proxy.seen, []);
      assert.equal(httpTarget.received[0]?.url, '/direct');
    });
  }

  for (const scheme of ['http', 'https'] as const) {
    it(`refuses a name resolving to a denied address over ${scheme} as it does without a proxy; the proxy sees nothing`, async (t) => {
      clear();
      const url = `${scheme}://${METADATA}/latest`;
      const direct = await client(t, undefined).post(post(url));
      const proxied = await client(t, settings()).post(post(url));
      assert.match(proxied.error ?? '', /every address of metadata\.example\.test is refused: address 169\.254\.169\.254 is denied/);
      assert.deepEqual([proxied.status, proxied.error, proxied.permanent], [direct.status, direct.error, direct.permanent]);
      assert.equal(proxied.permanent, true);
      const literal = await client(t, settings()).post(post(`${scheme}://169.254.169.254/latest`));
      assert.equal(literal.permanent, true);
      assert.deepEqual(proxy.seen, []);
    });
  }

  it('fails the attempt when the proxy refuses CONNECT, naming the proxy (not its credentials) and its answer', async (t) => {
    clear();
    proxy.refuse(407);
    const refused = await client(t, settings()).post(post(`https://${NAME}:${httpsTarget.port}/hook`));
    assert.equal(refused.status, null);
    assert.equal(
      refused.error,
      `egress proxy ${proxy.origin} refused CONNECT 127.0.0.1:${httpsTarget.port}: answered 407 Proxy Authentication Required`,
    );
    assert.equal(refused.permanent, false);
    proxy.refuse(403);
    const forbidden = await client(t, settings()).post(post(`https://${NAME}:${httpsTarget.port}/hook`));
    assert.match(forbidden.error ?? '', /refused CONNECT 127\.0\.0\.1:\d+: answered 403 Forbidden$/);
    assert.deepEqual(httpsTarget.seen, []);
  });

  it('fails an http attempt whose CONNECT the proxy answers 407, naming the proxy', async (t) => {
    clear();
    proxy.refuse(407);
    const refused = await client(t, settings()).post(post(`http://${NAME}:${httpTarget.port}/hook`));
    assert.deepEqual(
      [refused.status, refused.error, refused.permanent],
      [
        null,
        `egress proxy ${proxy.origin} refused CONNECT 127.0.0.1:${httpTarget.port}: answered 407 Proxy Authentication Required`,
        false,
      ],
    );
    assert.doesNotMatch(refused.error ?? '', /s3cret/);
    assert.deepEqual(httpTarget.received, []);
  });

  it('fails the attempt when the proxy cannot be reached, naming it', async (t) => {
    clear();
    const port = await unusedPort();
    const gone = `http://egress:s3cret@127.0.0.1:${port}`;
    const target = client(t, { httpProxy: gone, httpsProxy: gone, noProxy: [] });
    for (const url of [`https://${NAME}:${httpsTarget.port}/hook`, `http://${NAME}:${httpTarget.port}/hook`]) {
      const response = await target.post(post(url));
      assert.deepEqual(
        [response.status, response.error, response.permanent],
        [null, `egress proxy http://127.0.0.1:${port} could not be reached: connection refused`, false],
        url,
      );
    }
  });

  it('gives up at the exchange deadline while the proxy holds the CONNECT unanswered', async (t) => {
    clear();
    const held = new Set<Socket>();
    const silent = createNetServer((socket) => held.add(socket.resume()));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      for (const socket of held) socket.destroy();
      return new Promise<void>((resolve) => silent.close(() => resolve()));
    });
    const at = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const target = client(t, { httpProxy: at, httpsProxy: at, noProxy: [] }, 300);
    const response = await target.post(post(`https://${NAME}:${httpsTarget.port}/hook`));
    assert.equal(response.status, null);
    assert.match(response.error ?? '', /time-out/);
    assert.ok(response.durationMs < 2000, `${response.durationMs} ms`);
  });
});
