/**
 * Deliveries through the egress proxy end to end, on every database: the built server as a
 * process, a real forward proxy and real HTTP and HTTPS targets on 127.0.0.1, named `localhost`
 * in the subscriptions so that the server resolves them itself. The proxy is asked for the
 * checked address (127.0.0.1), the targets see their name. One server is configured with
 * NOTIFICATIONS_EGRESS_PROXY, one with the standard HTTPS_PROXY and NO_PROXY only. Broker
 * destinations (the shared RabbitMQ, NATS, Mosquitto and Redis) are reached directly, never
 * through the proxy.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, it, type TestContext } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { type ForwardProxy, type ProxiedRequest, startForwardProxy } from '../support/forward-proxy.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { MOSQUITTO_PORT, MOSQUITTO_SKIP, mqttTopic } from '../support/mosquitto.js';
import { NATS_PORT, NATS_SKIP, natsStream } from '../support/nats.js';
import { RABBITMQ_PORT, RABBITMQ_SKIP, rabbitmq } from '../support/rabbitmq.js';
import { REDIS_PORT, REDIS_SKIP, testRedis } from '../support/redis.js';
import { type ServedDatabase, serverOn } from '../support/server-on.js';
import { makeTestPki, type TestPki } from '../support/test-pki.js';

const USER = { 'http-remote-user': 'alice' };
const BROKERS_SKIP = RABBITMQ_SKIP || NATS_SKIP || MOSQUITTO_SKIP || REDIS_SKIP;
const BROKER_PORTS = [RABBITMQ_PORT, NATS_PORT, MOSQUITTO_PORT, REDIS_PORT];

/** The port a proxy request asks for: CONNECT's `host:port`, or an absolute URL's. */
const portAsked = ({ method, target }: ProxiedRequest) =>
  Number(method === 'CONNECT' ? target.slice(target.lastIndexOf(':') + 1) : URL.canParse(target) ? new URL(target).port || 80 : NaN);

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

    /** A subscription of alice's to the events from `source`; its uuid. */
    async function subscribe(server: ServedDatabase, targetUrl: string, source: string): Promise<string> {
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { ...USER, 'content-type': 'application/json' },
        body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl }),
      });
      assert.equal(created.status, 200, await created.clone().text());
      return ((await created.json()) as { uuid: string }).uuid;
    }

    /** Sends one event from `source`, which must match `matches` subscriptions. */
    async function send(server: ServedDatabase, source: string, matches: number): Promise<void> {
      const received = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id: `${source}-1`, source, type: 'org.example.proxied', data: {} }),
      });
      assert.equal(received.status, 200);
      assert.equal(((await received.json()) as { matches: number }).matches, matches);
    }

    async function delivered(server: ServedDatabase, uuid: string, what: string): Promise<void> {
      const state = async () =>
        (await server.db.db.selectFrom('matches').select('state').where('subscription_uuid', '=', uuid).executeTakeFirst())?.state;
      await eventually(async () => (await state()) === 'delivered', `the delivery to ${what} is delivered`);
    }

    async function deliver(server: ServedDatabase, targetUrl: string, source: string): Promise<void> {
      const uuid = await subscribe(server, targetUrl, source);
      await send(server, source, 1);
      await delivered(server, uuid, targetUrl);
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

    it(
      'with NOTIFICATIONS_EGRESS_PROXY, an event matching an http target and broker destinations: only the http delivery goes through the proxy',
      { skip: BROKERS_SKIP },
      async (t: TestContext) => {
        const queue = await (await rabbitmq(t)).queue();
        const stream = await natsStream(t);
        const topic = await mqttTopic(t);
        const redisStream = (await testRedis(t)).stream();
        // A target of its own: the tunnels to the suite's are open already, and would be reused.
        const beside = await startStub();
        t.after(() => beside.close());
        const besidePort = new URL(beside.url).port;
        const source = '/proxied-and-brokers';
        const httpUrl = `http://localhost:${besidePort}/brokers-beside`;
        const targets = [
          httpUrl,
          `amqp://127.0.0.1:${RABBITMQ_PORT}/?routing_key=${queue.name}`,
          `nats://127.0.0.1:${NATS_PORT}/${stream.subject()}`,
          `mqtt://127.0.0.1:${MOSQUITTO_PORT}/${topic.name}`,
          `redis://127.0.0.1:${REDIS_PORT}/${redisStream.key}`,
        ];
        const subscriptions = [];
        for (const target of targets) subscriptions.push(await subscribe(configured, target, source));
        proxy.seen.length = 0;

        await send(configured, source, targets.length);
        await queue.received(1);
        await stream.received(1);
        await topic.received(1);
        await redisStream.received(1);
        await eventually(() => beside.requests.length === 1, 'the http target has the event');
        for (const [index, uuid] of subscriptions.entries()) await delivered(configured, uuid, targets[index]!);

        // A broker client taken through the proxy would have asked it for its broker's address
        // (CONNECT 127.0.0.1:5672, or a request to it) before its message could arrive.
        const askedForBrokers = proxy.seen.filter((request) => BROKER_PORTS.includes(portAsked(request)));
        assert.deepEqual(askedForBrokers, [], 'the proxy was asked for no broker');
        assert.deepEqual(
          proxy.seen.map(({ method, target }) => [method, target]),
          [['CONNECT', `127.0.0.1:${besidePort}`]],
          'the proxy carried the http delivery, and nothing else',
        );
        assert.equal(beside.requests[0]!.headers.host, `localhost:${besidePort}`);
      },
    );
  });
}
