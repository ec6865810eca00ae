/**
 * Databases that do not answer, made of real TCP servers on 127.0.0.1: a listener that accepts
 * every connection and never says a word, and a proxy to a real PostgreSQL that can hold all
 * traffic for a while (nothing passes either way, new connections are accepted and wait), as
 * when the database host is partitioned away, and let it through again afterwards, in order.
 * The proxy also counts what its clients send, so that a test can count a client's writes.
 */
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';

export interface SilentListener {
  /** A PostgreSQL URL pointing at it. */
  readonly url: string;
  /** Connections it has accepted so far. */
  readonly accepted: () => number;
  /** When (Date.now()) it accepted its first connection: the client's connect time-out runs from about then. */
  readonly firstAcceptedAt: () => number | undefined;
  close(): Promise<void>;
}

export async function startSilentListener(): Promise<SilentListener> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  let firstAcceptedAt: number | undefined;
  const server = createServer((socket) => {
    accepted++;
    firstAcceptedAt ??= Date.now();
    track(sockets, socket);
  });
  const port = await listen(server);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/silent`,
    accepted: () => accepted,
    firstAcceptedAt: () => firstAcceptedAt,
    close: () => closeAll(server, sockets),
  };
}

export interface DatabaseProxy {
  /** `upstream` with host and port replaced by the proxy's. */
  readonly url: string;
  /** Chunks the clients have sent through it so far: a client's write, unless it waits for none of its answers between writes. */
  sent(): number;
  /**
   * ReadyForQuery messages PostgreSQL has sent so far: one at the end of each exchange (a
   * query, or a batch up to its Sync) and one when a connection starts: the round trips.
   */
  readyForQuery(): number;
  /** From now on nothing passes either way: bytes, ends and new connections wait. */
  hold(): void;
  /** Lets everything held through, in order, and what comes after. */
  release(): void;
  close(): Promise<void>;
}

export async function startDatabaseProxy(upstream: string): Promise<DatabaseProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  let held = false;
  /** What arrived during a hold, to pass on at release. */
  let backlog: Array<() => void> = [];
  let sent = 0;
  let ready = 0;
  const pass = (action: () => void) => (held ? backlog.push(action) : action());
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => pass(() => to.write(chunk)));
    from.on('close', () => pass(() => to.destroy()));
  };
  const server = createServer((client) => {
    track(sockets, client);
    const database = connect(Number(target.port || 5432), target.hostname);
    track(sockets, database);
    client.on('data', () => sent++);
    database.on(
      'data',
      countMessages(READY_FOR_QUERY, () => ready++),
    );
    forward(client, database);
    forward(database, client);
  });
  const port = await listen(server);
  const url = new URL(upstream);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    sent: () => sent,
    readyForQuery: () => ready,
    hold: () => {
      held = true;
    },
    release: () => {
      held = false;
      const actions = backlog;
      backlog = [];
      for (const action of actions) action();
    },
    close: () => closeAll(server, sockets),
  };
}

/** The type byte of PostgreSQL's ReadyForQuery message. */
const READY_FOR_QUERY = 0x5a;

/**
 * Calls `found` for each message of `type` in what a PostgreSQL server sends on one connection
 * (without TLS): a type byte and a length that counts itself, across chunk boundaries.
 */
function countMessages(type: number, found: () => void): (chunk: Buffer) => void {
  let header = Buffer.alloc(0);
  let skip = 0;
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - at);
        skip -= n;
        at += n;
        continue;
      }
      const n = Math.min(5 - header.length, chunk.length - at);
      header = Buffer.concat([header, chunk.subarray(at, at + n)]);
      at += n;
      if (header.length < 5) break;
      if (header[0] === type) found();
      skip = header.readUInt32BE(1) - 4;
      header = Buffer.alloc(0);
    }
  };
}

function track(sockets: Set<Socket>, socket: Socket): void {
  sockets.add(socket);
  socket.on('error', () => undefined);
  socket.on('close', () => sockets.delete(socket));
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function closeAll(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}
