/**
 * Publishing to the real Mosquitto on 127.0.0.1:1883 (MQTT 5), received by a real subscriber at
 * QoS 1 on the test's own topic: what each message carries, the credentials it logs in with, and
 * the connections: kept, reused, opened again after they are cut. A TCP proxy in front of the
 * broker stands for a broker that goes away; the broker itself is never touched. The shared
 * Mosquitto runs without passwords: a login's user name and password are checked against a
 * server that reads the CONNECT packet and refuses it as a broker would, and against a Mosquitto
 * of the test's own that asks for a password (password-brokers.ts).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { confirmed, connectionTests, outcome, type Protocol, publisher, request, SECRET } from '../support/broker-publisher-tests.js';
import { MOSQUITTO_PORT, MOSQUITTO_SKIP, mqttTopic } from '../support/mosquitto.js';
import { MOSQUITTO_PROGRAMS_SKIP, startMosquittoWithPassword } from '../support/password-brokers.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { eventually } from '../support/http-stub.js';

const toTopic = (topic: string, port = MOSQUITTO_PORT) => `mqtt://127.0.0.1:${port}/${topic}`;
const MQTT: Protocol = {
  peer: 'broker',
  kept: 'acknowledged',
  port: MOSQUITTO_PORT,
  skip: MOSQUITTO_SKIP,
  url: (port) => toTopic('t', port),
  destination: async (t, proxyPort) => {
    const topic = await mqttTopic(t);
    return { url: toTopic(topic.name, proxyPort), received: async (count) => (await topic.received(count), topic.messages.length) };
  },
  otherAuth: async () => ({ type: 'basic', basic: { username: 'u', password: 'p' } }),
};

/** A server that takes one CONNECT per connection, keeps its bytes, and answers with `connack`. */
async function fakeBroker(t: TestContext, connack: (connect: Buffer) => Buffer) {
  const connects: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('data', (data) => {
      connects.push(data);
      socket.end(connack(data));
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as { port: number }).port, connects };
}

/** The protocol level byte of a CONNECT packet (4: 3.1.1, 5: 5), after its fixed header and "MQTT". */
function protocolLevel(connect: Buffer): number {
  let at = 1;
  while ((connect[at]! & 0x80) !== 0) at++;
  return connect[at + 1 + 2 + 4]!;
}

describe('broker publisher: MQTT', () => {
  it(
    'publishes the exact bytes at QoS 1, not retained, with the content type and verifiable webhook headers as user properties',
    { skip: MOSQUITTO_SKIP },
    async (t) => {
      const topic = await mqttTopic(t);
      const body = '{ "specversion" : "1.0", "id":"e\\u00e9", "data": {"b":1,"a":[1.0, 2e3], "s": "é✓"} }';
      const sent = request(toTopic(topic.name), { body });
      assert.deepEqual(outcome(await publisher(t).publish(sent)), confirmed);
      await topic.received(1);
      const [{ payload, packet }] = topic.messages as [(typeof topic.messages)[0]];
      assert.ok(payload.equals(Buffer.from(body, 'utf8')), 'byte for byte');
      assert.equal(packet.qos, 1);
      assert.equal(packet.retain, false);
      assert.equal(packet.properties?.contentType, 'application/cloudevents+json; charset=utf-8');
      const headers = packet.properties?.userProperties as Record<string, string>;
      assert.equal(headers['webhook-id'], sent.signing.id);
      assert.doesNotThrow(() => new Webhook(SECRET).verify(payload.toString('utf8'), headers));
      assert.throws(
        () => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(body, headers),
        'another secret does not verify',
      );
    },
  );

  it(
    'publishes to a topic of several levels, percent-decoded; a topic no one subscribes to is still delivered (PUBACK)',
    { skip: MOSQUITTO_SKIP },
    async (t) => {
      const topic = await mqttTopic(t);
      const client = publisher(t);
      const escaped = topic.name.replace('/', '%2F');
      assert.deepEqual(outcome(await client.publish(request(toTopic(escaped)))), confirmed);
      assert.deepEqual(outcome(await client.publish(request(toTopic(`${topic.name}/nobody`)))), confirmed);
      await topic.received(1);
    },
  );

  it(
    'logs in with the user name and password of auth basic; a refused login is refused for good, without the password',
    { skip: MOSQUITTO_SKIP },
    async (t) => {
      // Mosquitto 5's CONNACK: reason 134 (bad user name or password), no properties.
      const broker = await fakeBroker(t, () => Buffer.from([0x20, 0x03, 0x00, 0x86, 0x00]));
      const answer = await publisher(t).publish(
        request(toTopic('t', broker.port), { auth: { type: 'basic', basic: { username: 'alice-mqtt', password: 'pa55-mqtt' } } }),
      );
      assert.deepEqual(outcome(answer), { error: 'the broker refused the connection: Bad User Name or Password (134)', permanent: true });
      assert.equal(broker.connects.length, 1);
      const connect = broker.connects[0]!.toString('latin1');
      assert.equal(protocolLevel(broker.connects[0]!), 5);
      assert.ok(connect.includes('alice-mqtt') && connect.includes('pa55-mqtt'), 'user name and password in the CONNECT');
      // And the real broker (anonymous here) takes a login with credentials.
      const topic = await mqttTopic(t);
      const withAuth = request(toTopic(topic.name), { auth: { type: 'basic', basic: { username: 'u', password: 'p' } } });
      assert.deepEqual(outcome(await publisher(t).publish(withAuth)), confirmed);
      await topic.received(1);
    },
  );

  it(
    'a broker that asks for a password: the right one is acknowledged and the subscriber has the message; a wrong one is refused for good',
    { skip: MOSQUITTO_PROGRAMS_SKIP },
    async (t) => {
      const broker = await startMosquittoWithPassword(t);
      const topic = await mqttTopic(t, broker);
      const client = publisher(t);
      const login = (password: string) => ({ type: 'basic', basic: { username: broker.username, password } }) as const;
      const url = toTopic(topic.name, broker.port);
      assert.deepEqual(outcome(await client.publish(request(url, { auth: login(broker.password) }))), confirmed);
      // The same broker and topic: the connection logged in with the right password is not the wrong one's.
      assert.deepEqual(outcome(await client.publish(request(url, { auth: login(`${broker.password}-not`) }))), {
        error: 'the broker refused the connection: Not authorized (135)',
        permanent: true,
      });
      await topic.received(1);
      assert.equal(topic.messages.length, 1, 'nothing published with the wrong password');
    },
  );

  it('a broker that speaks no MQTT 5 is reached with 3.1.1', async (t) => {
    // 3.1.1's CONNACK: return code 1 (unacceptable protocol version) to a 5 CONNECT, 5 (not authorized) to the 3.1.1 one.
    const broker = await fakeBroker(t, (connect) =>
      protocolLevel(connect) === 5 ? Buffer.from([0x20, 0x02, 0x00, 0x01]) : Buffer.from([0x20, 0x02, 0x00, 0x05]),
    );
    const answer = await publisher(t).publish(request(toTopic('t', broker.port)));
    assert.deepEqual(
      broker.connects.map((connect) => protocolLevel(connect)),
      [5, 4],
    );
    assert.deepEqual(outcome(answer), { error: 'the broker refused the connection: Not authorized (5)', permanent: true });
  });

  it('a URL that cannot be used is a permanent failure, without a connection', async (t) => {
    const client = publisher(t);
    assert.deepEqual(outcome(await client.publish(request('mqtt://127.0.0.1/a/%2B/b'))), {
      error: 'target URL is not usable: the topic "a/+/b" has a wildcard (+ or #): a message is published to one topic, not a filter',
      permanent: true,
    });
  });

  connectionTests(MQTT);

  it('a connection cut with publishes in flight: each is acknowledged or later, none hangs', { skip: MOSQUITTO_SKIP }, async (t) => {
    const topic = await mqttTopic(t);
    const proxy = await startTcpProxy(MOSQUITTO_PORT);
    t.after(() => proxy.close());
    const client = publisher(t);
    const url = toTopic(topic.name, proxy.port);
    assert.deepEqual(outcome(await client.publish(request(url))), confirmed);
    const inFlight = Array.from({ length: 50 }, () => client.publish(request(url)));
    proxy.cut();
    const answers = await Promise.all(inFlight);
    for (const answer of answers) assert.equal(answer.permanent, false, JSON.stringify(answer));
    const acknowledged = answers.filter((a) => a.error === null).length;
    await eventually(() => topic.messages.length >= 1 + acknowledged, `${1 + acknowledged} messages`);
    assert.deepEqual(outcome(await client.publish(request(url))), confirmed, 'a new connection after the cut');
  });
});
