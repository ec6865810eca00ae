/**
 * Publishing to the real NATS server on 127.0.0.1:4222 (JetStream), into a stream of the test's
 * own: what each message carries, what the server's refusals come to, and the connections: kept,
 * reused, opened again after they are cut. A TCP proxy in front of the server stands for a
 * server that goes away; the server itself is never touched. The shared server runs without auth:
 * credentials are checked against a stand-in that asks for them and refuses them (what is sent),
 * and against a nats-server of the test's own that asks for a password (password-brokers.ts).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { confirmed, connectionTests, outcome, type Protocol, publisher, request, SECRET } from '../support/broker-publisher-tests.js';
import { NATS_PORT, NATS_SKIP, natsStream } from '../support/nats.js';
import { NATS_SERVER_SKIP, startNatsWithPassword } from '../support/password-brokers.js';

const toSubject = (subject: string, port = NATS_PORT) => `nats://127.0.0.1:${port}/${subject}`;
const NATS: Protocol = {
  peer: 'server',
  kept: 'confirmed',
  port: NATS_PORT,
  skip: NATS_SKIP,
  url: (port) => toSubject('a.b', port),
  destination: async (t, proxyPort) => {
    const stream = await natsStream(t);
    return { url: toSubject(stream.subject(), proxyPort), received: async (count) => (await stream.received(count)).length };
  },
  otherAuth: async () => ({ type: 'basic', basic: { username: 'u', password: 'p' } }),
  // The NATS client says it its own way.
  timeoutError: /time-out/,
};

/** A server that asks for credentials and refuses any, keeping the CONNECT lines it was sent. */
async function refusingServer(t: TestContext): Promise<{ port: number; connects: Array<Record<string, unknown>> }> {
  const connects: Array<Record<string, unknown>> = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.write(
      'INFO {"server_id":"stand-in","version":"2.9.10","proto":1,"headers":true,"max_payload":1048576,"auth_required":true}\r\n',
    );
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8');
      const line = /^CONNECT (.*)\r\n/m.exec(text);
      if (line === null) return;
      connects.push(JSON.parse(line[1]!) as Record<string, unknown>);
      socket.end("-ERR 'Authorization Violation'\r\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as { port: number }).port, connects };
}

describe('broker publisher: NATS JetStream', () => {
  it('publishes the exact bytes with the content type, message id and verifiable webhook headers', { skip: NATS_SKIP }, async (t) => {
    const stream = await natsStream(t);
    const body = '{ "specversion" : "1.0", "id":"e\\u00e9", "data": {"b":1,"a":[1.0, 2e3]} }';
    const sent = request(toSubject(stream.subject()), { body });
    assert.deepEqual(outcome(await publisher(t).publish(sent)), confirmed);
    const [message] = await stream.received(1);
    assert.equal(message!.subject, stream.subject());
    assert.ok(Buffer.from(message!.data).equals(Buffer.from(body, 'utf8')), 'byte for byte');
    const header = (name: string) => message!.header.get(name);
    assert.equal(header('Content-Type'), 'application/cloudevents+json; charset=utf-8');
    assert.equal(header('Nats-Msg-Id'), sent.signing.id);
    assert.equal(header('webhook-id'), sent.signing.id);
    const headers = {
      'webhook-id': header('webhook-id'),
      'webhook-timestamp': header('webhook-timestamp'),
      'webhook-signature': header('webhook-signature'),
    };
    assert.doesNotThrow(() => new Webhook(SECRET).verify(Buffer.from(message!.data).toString('utf8'), headers));
    assert.throws(() => new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(body, headers), 'another secret does not verify');
  });

  it('a delivery published again (a retry after a lost acknowledgement) is kept once by the stream', { skip: NATS_SKIP }, async (t) => {
    const stream = await natsStream(t);
    const client = publisher(t);
    const id = randomUUID();
    assert.deepEqual(outcome(await client.publish(request(toSubject(stream.subject()), { id }))), confirmed);
    assert.deepEqual(outcome(await client.publish(request(toSubject(stream.subject()), { id }))), confirmed);
    assert.deepEqual(outcome(await client.publish(request(toSubject(stream.subject('other'))))), confirmed);
    await stream.received(2);
    assert.equal(await stream.count(), 2);
  });

  it(
    'a subject no stream holds is refused for good and named; publishes to others meanwhile are confirmed',
    { skip: NATS_SKIP },
    async (t) => {
      const stream = await natsStream(t);
      const unheld = stream.unheldSubject();
      const client = publisher(t);
      const [refused, ...others] = await Promise.all([
        client.publish(request(toSubject(unheld))),
        ...Array.from({ length: 5 }, () => client.publish(request(toSubject(stream.subject())))),
      ]);
      assert.deepEqual(outcome(refused!), { error: `no stream holds subject "${unheld}" (no responders)`, permanent: true });
      for (const other of others) assert.deepEqual(outcome(other), confirmed);
      await stream.received(5);
    },
  );

  it('a message larger than the server takes is refused for good; the connection goes on', { skip: NATS_SKIP }, async (t) => {
    const stream = await natsStream(t);
    const client = publisher(t);
    const large = `{"specversion":"1.0","id":"1","data":"${'x'.repeat(1_100_000)}"}`;
    assert.deepEqual(outcome(await client.publish(request(toSubject(stream.subject()), { body: large }))), {
      error: 'the message is larger than the server takes (1048576 bytes)',
      permanent: true,
    });
    assert.deepEqual(outcome(await client.publish(request(toSubject(stream.subject())))), confirmed);
    await stream.received(1);
  });

  it('credentials of auth basic are sent as user and password; a refused login is refused for good', async (t) => {
    const server = await refusingServer(t);
    const auth = { type: 'basic', basic: { username: 'notifier', password: 's3cret' } } as const;
    const answer = await publisher(t).publish(request(toSubject('a.b', server.port), { auth }));
    assert.equal(answer.permanent, true);
    assert.match(answer.error!, /^the server refused the connection: .*authorization violation/i);
    assert.doesNotMatch(answer.error!, /s3cret/);
    assert.equal(server.connects[0]!.user, 'notifier');
    assert.equal(server.connects[0]!.pass, 's3cret');
  });

  it(
    'a server that asks for a password: the right one is confirmed and the stream holds the message; a wrong one is refused for good',
    { skip: NATS_SERVER_SKIP },
    async (t) => {
      const server = await startNatsWithPassword(t);
      const stream = await natsStream(t, server);
      const client = publisher(t);
      const login = (password: string) => ({ type: 'basic', basic: { username: server.username, password } }) as const;
      const url = toSubject(stream.subject(), server.port);
      assert.deepEqual(outcome(await client.publish(request(url, { auth: login(server.password) }))), confirmed);
      // The same server and subject: the connection logged in with the right password is not the wrong one's.
      assert.deepEqual(outcome(await client.publish(request(url, { auth: login(`${server.password}-not`) }))), {
        error: "the server refused the connection: 'Authorization Violation'",
        permanent: true,
      });
      await stream.received(1);
      assert.equal(await stream.count(), 1, 'nothing published with the wrong password');
    },
  );

  it('credentials given to the shared server (no auth configured) are accepted', { skip: NATS_SKIP }, async (t) => {
    const stream = await natsStream(t);
    const auth = { type: 'basic', basic: { username: 'notifier', password: 's3cret' } } as const;
    assert.deepEqual(outcome(await publisher(t).publish(request(toSubject(stream.subject()), { auth }))), confirmed);
    await stream.received(1);
  });

  it('a URL or credentials that cannot be used are permanent failures, without a connection', async (t) => {
    const client = publisher(t);
    const cases: Array<[string, string]> = [
      ['nats://127.0.0.1/', 'names no subject: write it as the path, nats://host[:port]/SUBJECT'],
      ['nats://127.0.0.1/a.*', 'the subject "a.*" has a wildcard: publish to one subject'],
      ['nats://127.0.0.1/a..b', 'the subject "a..b" has an empty token or white space'],
      ['nats://127.0.0.1/a/b', 'the path is the subject: one segment (tokens are separated by dots)'],
      ['nats://127.0.0.1/a?stream=s', 'takes no query parameters: the path is the subject'],
    ];
    for (const [url, why] of cases)
      assert.deepEqual(outcome(await client.publish(request(url))), { error: `target URL is not usable: ${why}`, permanent: true }, url);
    const header = { type: 'header', header: { type: 'Bearer', credentials: 't' } } as const;
    assert.deepEqual(outcome(await client.publish(request('nats://127.0.0.1/a', { auth: header }))), {
      error: 'not sent: auth of type "header" cannot be used with nats: only basic (user name and password)',
      permanent: true,
    });
  });

  connectionTests(NATS);
});
