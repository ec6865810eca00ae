/**
 * A TCP proxy on 127.0.0.1 in front of a real server (a broker), that a test can cut or stop
 * without touching the server itself: `cut` ends every connection through it at once (as a
 * broker restart or a network cut does to its clients), `stop` also refuses new ones until
 * `start` (a broker that is down).
 */
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Connections it has accepted so far. */
  accepted(): number;
  /** Connections open through it now. */
  open(): number;
  /** Resets every connection through it; it goes on listening. */
  cut(): void;
  /** Stops listening and cuts every connection: connecting is refused until `start`. */
  stop(): Promise<void>;
  /** Listens again, on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(upstreamPort: number, upstreamHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const clients = new Set<Socket>();
  let accepted = 0;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  };
  const handle = (client: Socket) => {
    accepted++;
    track(client);
    clients.add(client);
    client.on('close', () => clients.delete(client));
    const upstream = connect(upstreamPort, upstreamHost);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  };
  let server: Server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const cut = () => {
    for (const socket of sockets) socket.resetAndDestroy();
  };
  const stop = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    cut();
    await closed;
  };
  return {
    port,
    accepted: () => accepted,
    open: () => clients.size,
    cut,
    stop,
    start: async () => {
      server = createServer(handle);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', resolve);
      });
    },
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
