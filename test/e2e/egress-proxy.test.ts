/**
 * Deliveries through the egress proxy end to end, on every database: the built server as a
 * process, a real forward proxy and real HTTP and HTTPS targets on 127.0.0.1, named `localhost`
 * in the subscriptions so that the server resolves them itself. The proxy is asked for the
 * checked address (127.0.0.1), the targets see their name. One server is configured with
 * NOTIFICATIONS_EGRESS_PROXY, one with the standard HTTPS_PROXY and NO_PROXY only.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { type ForwardProxy, startForwardProxy } from '../support/forward-proxy.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { type ServedDatabase, serverOn } from '../support/server-on.js';
import { makeTestPki, type TestPki } from '../support/test-pki.js';

const USER = { 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `egress proxy end to end (${backend.name})`, () => {
    let certificates: TestPki;
    let proxy: ForwardProxy;
    let httpTarget: HttpStub;
    let httpsTarget: HttpsServer;
    const httpsHosts: string[] = [];
    const httpsPort = () => (httpsTarget.address() as AddressInfo).port;
    const httpPort = () => new URL(httpTarget.url).port;

    before(async () => {
      certificates = makeTestPki(['localhost']);
      proxy = await startForwardProxy();
      httpTarget = await startStub();
      httpsTarget = createHttpsServer({ key: certificates.serverKey, cert: certificates.serverCert }, (request, response) => {
        httpsHosts.push(request.headers.host ?? '');
        request.resume().on('end', () => response.writeHead(204).end());
      });
      await new Promise<void>((resolve) => httpsTarget.listen(0, '127.0.0.1', resolve));
    });

    const common = () => ({
      NOTIFICATIONS_RETRY_DELAYS: '100ms,100ms,100ms',
      NOTIFICATIONS_TARGET_TIMEOUT: '2s',
      NOTIFICATIONS_LEASE: '5s',
      // The test CA, trusted by the server as an operator would trust an internal one.
      NODE_EXTRA_CA_CERTS: certificates.caFile,
      // localhost is asked of the resolver: its IPv4 address is the one this test's proxy reaches.
      NODE_OPTIONS: '--dns-result-order=ipv4first',
    });
    const configured = serverOn(
      backend,
      () => ({ ...common(), NOTIFICATIONS_EGRESS_PROXY: `http://egress:s3cret@127.0.0.1:${proxy.port}` }),
      { open: true },
    );
    const standard = serverOn(backend, () => ({ ...common(), HTTPS_PROXY: proxy.origin, NO_PROXY: 'notifications.example.test' }), {
      open: true,
    });

    after(async () => {
      await Promise.all([proxy.close(), httpTarget.close(), new Promise<void>((resolve) => httpsTarget.close(() => resolve()))]);
      httpsTarget.closeAllConnections();
      certificates.remove();
    });

    async function deliver(server: ServedDatabase, targetUrl: string, source: string): Promise<void> {
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl }),
      });
      assert.equal(created.status, 200, await created.clone().text());
      const { uuid } = (await created.json()) as { uuid: string };
      const received = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id: `${source}-1`, source, type: 'org.example.proxied', data: {} }),
      });
      assert.equal(received.status, 200);
      const state = async () =>
        (await server.db.db.selectFrom('matches').select('state').where('subscription_uuid', '=', uuid).executeTakeFirst())?.state;
      await eventually(async () => (await state()) === 'delivered', `the delivery to ${targetUrl} is delivered`);
    }

    it('with NOTIFICATIONS_EGRESS_PROXY, delivers to http and https targets through the proxy, asking it for the checked address', async () => {
      proxy.seen.length = 0;
      await deliver(configured, `http://localhost:${httpPort()}/hook`, '/proxied-http');
      await deliver(configured, `https://localhost:${httpsPort()}/hook`, '/proxied-https');
      assert.deepEqual(
        proxy.seen.map(({ method, target, proxyAuthorization }) => [method, target, proxyAuthorization]),
        [
          ['CONNECT', `127.0.0.1:${httpPort()}`, `Basic ${Buffer.from('egress:s3cret').toString('base64')}`],
          ['CONNECT', `127.0.0.1:${httpsPort()}`, `Basic ${Buffer.from('egress:s3cret').toString('base64')}`],
        ],
      );
      assert.equal(httpTarget.requests.at(-1)?.headers.host, `localhost:${httpPort()}`);
      assert.equal(httpsHosts.at(-1), `localhost:${httpsPort()}`);
      const logs = configured.logs();
      assert.match(logs, /egress proxy/);
      assert.doesNotMatch(logs, /s3cret/);
    });

    it('with HTTPS_PROXY and NO_PROXY only, tunnels https deliveries and sends http ones direct (no HTTP_PROXY)', async () => {
      proxy.seen.length = 0;
      await deliver(standard, `https://localhost:${httpsPort()}/hook`, '/standard-https');
      await deliver(standard, `http://localhost:${httpPort()}/hook`, '/standard-http');
      assert.deepEqual(
        proxy.seen.map(({ method, target, proxyAuthorization }) => [method, target, proxyAuthorization]),
        [['CONNECT', `127.0.0.1:${httpsPort()}`, undefined]],
      );
    });
  });
}
