/**
 * The benchmark's delivery target: a keep-alive HTTP server that answers 204 at once and
 * counts what arrives, with each delivery's arrival time by CloudEvent id when asked to.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CountingTarget {
  readonly url: string;
  delivered(): number;
  lastDeliveryAt(): number;
  /** Arrival times (performance.now()) of each delivery, by event id; only with `timeArrivals`. */
  readonly arrivals: Map<string, number[]>;
  /** Resolves once no delivery came for `quietMs` (or `timeoutMs` passed). */
  settle(quietMs: number, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startCountingTarget({ timeArrivals = false } = {}): Promise<CountingTarget> {
  let delivered = 0;
  let last = 0;
  const arrivals = new Map<string, number[]>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => timeArrivals && chunks.push(chunk));
    request.on('end', () => {
      delivered++;
      last = performance.now();
      if (timeArrivals) {
        const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
        const times = arrivals.get(id);
        if (times) times.push(last);
        else arrivals.set(id, [last]);
      }
      response.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    delivered: () => delivered,
    lastDeliveryAt: () => last,
    arrivals,
    settle: async (quietMs, timeoutMs) => {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline && (last === 0 || performance.now() - last < quietMs))
        await new Promise((r) => setTimeout(r, 100));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
