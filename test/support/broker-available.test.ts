/**
 * The broker probe against servers of the test's own (the shared brokers are never stopped to
 * see it fail): a closed port, a server that never speaks, one that closes at once, one that
 * answers something else, and one that answers as the broker does, in pieces.
 */
import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { ask, type BrokerProbe, brokerSkip } from './broker-available.js';

const probe = (port: number, fields: Partial<BrokerProbe> = {}): BrokerProbe => ({
  name: 'Thing',
  port,
  hello: 'HELLO\r\n',
  answer: '+WELCOME',
  provide: 'apt-get install thing; thing --daemon',
  timeoutMs: 300,
  ...fields,
});

/** A server on 127.0.0.1 that hands each connection, with what it has been sent so far, to `serve`. */
async function server(t: TestContext, serve: (socket: Socket, received: () => string) => void): Promise<number> {
  const sockets = new Set<Socket>();
  const listening = createServer((socket) => {
    sockets.add(socket);
    let received = '';
    socket.on('data', (chunk) => void (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    serve(socket, () => received);
  });
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => listening.close(() => resolve()));
  });
  return (listening.address() as AddressInfo).port;
}

async function closedPort(): Promise<number> {
  const listening = createServer();
  await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
  const { port } = listening.address() as AddressInfo;
  await new Promise<void>((resolve) => listening.close(() => resolve()));
  return port;
}

describe('broker probe', () => {
  it('a closed port: connection refused, and the reason names the broker, its address and how to provide it', async () => {
    const port = await closedPort();
    assert.equal(await ask(probe(port)), 'connection refused');
    assert.equal(
      await brokerSkip(probe(port)),
      `Thing is not answering on 127.0.0.1:${port} (connection refused): Debian: apt-get install thing; thing --daemon (.ci/run does)`,
    );
  });

  it('a server that accepts and never speaks: no answer within the time-out', async (t) => {
    const port = await server(t, () => undefined);
    const started = performance.now();
    assert.equal(await ask(probe(port)), 'no answer within 300 ms');
    assert.ok(performance.now() - started < 1_000);
  });

  it('a server that closes the connection at once: no answer', async (t) => {
    const port = await server(t, (socket) => socket.end());
    assert.equal(await ask(probe(port)), 'it closed the connection without an answer');
  });

  it('a server that answers something else is not the broker', async (t) => {
    const port = await server(t, (socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    assert.equal(await ask(probe(port)), 'it answered "HTTP/1.1 400 Bad Request\\r\\n\\r\\n", not as Thing does');
    assert.match((await brokerSkip(probe(port))) || '', /^Thing is not answering on 127\.0\.0\.1:\d+ \(it answered /);
  });

  it('a server that answers the hello as the broker does, in pieces: it answers (no skip)', async (t) => {
    const hellos: string[] = [];
    const port = await server(t, (socket, received) => {
      socket.on('data', () => {
        if (!received().endsWith('\r\n')) return;
        hellos.push(received());
        socket.write('+WEL');
        setTimeout(() => socket.write('COME and more'), 20);
      });
    });
    assert.equal(await brokerSkip(probe(port)), false);
    assert.deepEqual(hellos, ['HELLO\r\n']);
  });

  it('a broker that speaks first is asked nothing', async (t) => {
    let sent = () => '';
    const port = await server(t, (socket, received) => {
      sent = received;
      socket.write('INFO {}\r\n');
    });
    assert.equal(await ask(probe(port, { hello: undefined, answer: 'INFO ' })), undefined);
    assert.equal(sent(), '');
  });
});
