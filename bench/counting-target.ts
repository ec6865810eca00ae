/**
 * The benchmark's delivery target: a keep-alive HTTP server that answers 204 (at once, or after
 * `delayMs`) and counts what it answered, with each delivery's arrival time by CloudEvent id
 * when asked to. Told to (`failFirst`), it answers each delivery 500 a number of times first,
 * telling deliveries apart by their `webhook-id` (the same on every try).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CountingTarget {
  readonly url: string;
  /** Requests answered so far (with 204: the 500s of `failFirst` are not counted). */
  delivered(): number;
  /** Requests answered 500 so far (see `failFirst`). */
  failed(): number;
  /** When the last answer went out (performance.now()). */
  lastDeliveryAt(): number;
  /** Arrival times (performance.now()) of each delivery, by event id; only with `timeArrivals`. */
  readonly arrivals: Map<string, number[]>;
  /** Resolves once no delivery came for `quietMs` (or `timeoutMs` passed). */
  settle(quietMs: number, timeoutMs: number): Promise<void>;
  /** Resolves once `count` requests were answered, or none was for `quietMs`, or `timeoutMs` passed. */
  reach(count: number, quietMs: number, timeoutMs: number): Promise<void>;
  /** From now on, each request is answered at once (a slow target recovers). */
  answerAtOnce(): void;
  /** From now on, each delivery not seen yet is answered 500 `times` times before it is answered 204. */
  failFirst(times: number): void;
  close(): Promise<void>;
}

export interface CountingTargetOptions {
  timeArrivals?: boolean;
  /** Each request is answered this long after it arrived (a slow target); 0: at once. */
  delayMs?: number;
}

export async function startCountingTarget(options: CountingTargetOptions = {}): Promise<CountingTarget> {
  const { timeArrivals = false } = options;
  let delayMs = options.delayMs ?? 0;
  let delivered = 0;
  let failed = 0;
  let failures = 0;
  /** The 500s still owed to each delivery seen, by webhook-id. */
  const failuresLeft = new Map<string, number>();
  let last = 0;
  const arrivals = new Map<string, number[]>();
  const pending = new Set<NodeJS.Timeout>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => timeArrivals && chunks.push(chunk));
    request.on('end', () => {
      if (timeArrivals) {
        const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
        const times = arrivals.get(id);
        if (times) times.push(performance.now());
        else arrivals.set(id, [performance.now()]);
      }
      const webhookId = request.headers['webhook-id'];
      if (failures > 0 && typeof webhookId === 'string') {
        const left = failuresLeft.get(webhookId) ?? failures;
        if (left > 0) {
          failuresLeft.set(webhookId, left - 1);
          failed++;
          last = performance.now();
          return response.writeHead(500).end();
        }
        failuresLeft.delete(webhookId);
      }
      const answer = () => {
        delivered++;
        last = performance.now();
        response.writeHead(204).end();
      };
      if (delayMs <= 0) return answer();
      const timer = setTimeout(() => {
        pending.delete(timer);
        answer();
      }, delayMs);
      pending.add(timer);
    });
  });
  server.keepAliveTimeout = 60_000;
  // A slow target holds a connection per request in flight: room for the sender to open many at once.
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
  const quietFor = (quietMs: number) => last !== 0 && performance.now() - last >= quietMs;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    delivered: () => delivered,
    failed: () => failed,
    lastDeliveryAt: () => last,
    arrivals,
    settle: async (quietMs, timeoutMs) => {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline && !quietFor(quietMs)) await new Promise((r) => setTimeout(r, 100));
    },
    reach: async (count, quietMs, timeoutMs) => {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline && delivered < count && !quietFor(quietMs)) await new Promise((r) => setTimeout(r, 100));
    },
    answerAtOnce: () => {
      delayMs = 0;
    },
    failFirst: (times) => {
      failures = times;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of pending) clearTimeout(timer);
        pending.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
