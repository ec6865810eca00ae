/**
 * test/support/database-proxy.ts in a worker thread of its own: a proxy between the server and
 * PostgreSQL that counts the chunks the server sends (about one a statement) and PostgreSQL's
 * ReadyForQuery messages (one a round trip), without sharing an
 * event loop with the bench's readers. In the bench's own loop, the callbacks of thousands of
 * readers woken at once would hold the server's statements back, and the latencies measured
 * would be partly the bench's.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { startDatabaseProxy } from '../test/support/database-proxy.js';

export interface CountingProxy {
  /** The upstream URL with the proxy's host and port. */
  readonly url: string;
  /** Chunks the clients have sent through it so far. */
  sent(): Promise<number>;
  /** ReadyForQuery messages PostgreSQL has sent so far: the round trips (and one a connection). */
  readyForQuery(): Promise<number>;
  /** Connections the server has opened through it so far. */
  accepted(): Promise<number>;
  close(): Promise<void>;
}

const ROLE = 'bench-database-proxy';

type Request = { id: number; op: 'sent' | 'readyForQuery' | 'accepted' | 'close' };
type Reply = { id: number; value: number };

export async function startDatabaseProxyThread(upstream: string): Promise<CountingProxy> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { role: ROLE, upstream } });
  const pending = new Map<number, (value: number) => void>();
  let failure: Error | undefined;
  worker.on('error', (error) => {
    failure = error;
    for (const resolve of pending.values()) resolve(NaN);
    pending.clear();
  });
  const url = await new Promise<string>((resolve, reject) => {
    worker.once('message', (message: { url: string }) => resolve(message.url));
    worker.once('error', reject);
  });
  worker.on('message', (reply: Reply) => {
    pending.get(reply.id)?.(reply.value);
    pending.delete(reply.id);
  });
  let next = 0;
  const ask = (op: Request['op']) =>
    new Promise<number>((resolve) => {
      if (failure) return resolve(NaN);
      const id = next++;
      pending.set(id, resolve);
      worker.postMessage({ id, op } satisfies Request);
    });
  return {
    url,
    sent: () => ask('sent'),
    readyForQuery: () => ask('readyForQuery'),
    accepted: () => ask('accepted'),
    close: async () => {
      await ask('close');
      await worker.terminate();
    },
  };
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) {
  const port = parentPort!;
  const proxy = await startDatabaseProxy((workerData as { upstream: string }).upstream);
  port.on('message', (request: Request) => {
    if (request.op === 'sent') port.postMessage({ id: request.id, value: proxy.sent() } satisfies Reply);
    else if (request.op === 'readyForQuery') port.postMessage({ id: request.id, value: proxy.answered().roundTrips } satisfies Reply);
    else if (request.op === 'accepted') port.postMessage({ id: request.id, value: proxy.accepted() } satisfies Reply);
    else void proxy.close().then(() => port.postMessage({ id: request.id, value: proxy.sent() } satisfies Reply));
  });
  port.postMessage({ url: proxy.url });
}
