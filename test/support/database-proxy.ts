/**
 * Databases that do not answer, made of real TCP servers on 127.0.0.1: a listener that accepts
 * every connection and never says a word, and a proxy to a real PostgreSQL that can hold all
 * traffic for a while (nothing passes either way, new connections are accepted and wait), as
 * when the database host is partitioned away, and let it through again afterwards, in order.
 * The proxy also counts what its clients send, so that a test can count a client's writes, and
 * reads PostgreSQL's answers to count the transactions they commit (serverCounts).
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
  /** Connections the clients have opened through it so far. */
  accepted(): number;
  /** What PostgreSQL's answers through it say so far: round trips ended, and transactions committed. */
  answered(): ServerCounts;
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
  let accepted = 0;
  const answered: ServerCounts = { roundTrips: 0, commits: 0 };
  const pass = (action: () => void) => (held ? backlog.push(action) : action());
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => pass(() => to.write(chunk)));
    from.on('close', () => pass(() => to.destroy()));
  };
  const server = createServer((client) => {
    accepted++;
    track(sockets, client);
    const database = connect(Number(target.port || 5432), target.hostname);
    track(sockets, database);
    client.on('data', () => sent++);
    database.on('data', countAnswers(answered));
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
    accepted: () => accepted,
    answered: () => ({ ...answered }),
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

export interface ServerCounts {
  /** ReadyForQuery messages: each ends one round trip (a query, a Sync; the first after start-up too). */
  roundTrips: number;
  /**
   * Transactions committed: a round trip that completed a command and left the session outside
   * a transaction (a statement in autocommit, or a COMMIT). A bare Sync, which runs nothing,
   * commits nothing, and neither does a round trip inside a transaction.
   */
  commits: number;
}

/** Reads PostgreSQL's messages off one connection (after start-up, every message is a type byte and a length) and counts into `counts`. */
function countAnswers(counts: ServerCounts): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  let completed = false;
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 5) {
      const length = pending.readInt32BE(1);
      if (pending.length < length + 1) break;
      const type = String.fromCharCode(pending[0]!);
      const status = String.fromCharCode(pending[5] ?? 0);
      pending = pending.subarray(length + 1);
      if (type === 'C') completed = true;
      if (type === 'Z') {
        counts.roundTrips++;
        if (completed && status === 'I') counts.commits++;
        completed = false;
      }
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
