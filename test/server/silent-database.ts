/**
 * Databases that do not answer, made of real TCP servers on 127.0.0.1: one that accepts every
 * connection and never says a word, and a proxy to a real PostgreSQL that can be frozen (from
 * then on nothing passes either way on its connections, and new ones are accepted and left
 * silent), as when the database host is blackholed.
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

export interface SilentListener {
  /** A PostgreSQL URL pointing at it. */
  readonly url: string;
  /** Connections it has accepted so far. */
  readonly accepted: () => number;
  close(): Promise<void>;
}

export async function startSilentListener(): Promise<SilentListener> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await listen(server);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/silent`,
    accepted: () => accepted,
    close: () => closeAll(server, sockets),
  };
}

export interface FreezableProxy {
  /** `upstream` with host and port replaced by the proxy's. */
  readonly url: string;
  /** From now on nothing passes, and new connections are accepted and left silent. */
  freeze(): void;
  close(): Promise<void>;
}

export async function startFreezableProxy(upstream: string): Promise<FreezableProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  let frozen = false;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  };
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => {
      if (!frozen) to.write(chunk);
    });
    from.on('close', () => {
      if (!frozen) to.destroy();
    });
  };
  const server = createServer((client) => {
    track(client);
    if (frozen) return;
    const database = connect(Number(target.port || 5432), target.hostname);
    track(database);
    forward(client, database);
    forward(database, client);
  });
  const port = await listen(server);
  const url = new URL(upstream);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    freeze: () => {
      frozen = true;
    },
    close: () => closeAll(server, sockets),
  };
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function closeAll(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}
