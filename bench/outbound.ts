/**
 * The outbound thread alone (src/delivery/outbound-thread.ts), in this process: policy calls and
 * signed deliveries of the facility's event to a keep-alive HTTP server answering 204 in a
 * thread of its own, 64 exchanges in flight. What each exchange costs the thread that makes it
 * and the main thread that hands it over, read from /proc per thread: no database, no server,
 * no load generator share the figures, so they move far less from run to run than the
 * pipeline's, in which the outbound thread is the largest (six exchanges an event).
 */
import { Worker } from 'node:worker_threads';
import { type OutboundThread, startOutboundThread } from '../src/delivery/outbound-thread.js';
import { OUTBOUND_THREAD_NAME } from '../src/thread-name.js';
import { facilityEventText } from '../test/support/fixtures.js';
import { mainThreadMs, namedThreadMs } from './cpu-time.js';
import type { Row } from './table.js';

const IN_FLIGHT = 64;
const WARM_UP = 3_000;
const MEASURED = 30_000;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** Answers every request 204 once its body has been read; its port comes back as the worker's first message. */
const RESPONDER = `
const { createServer } = require('node:http');
const { parentPort } = require('node:worker_threads');
const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(204).end());
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', () => server.close(() => process.exit(0)));
`;

export async function benchOutbound(): Promise<Row[]> {
  const responder = new Worker(RESPONDER, { eval: true });
  const port = await new Promise<number>((resolve) => responder.once('message', resolve));
  const origin = `http://127.0.0.1:${port}`;
  const outbound = startOutboundThread(
    {
      target: { timeoutMs: 10_000, connectionsPerOrigin: 16, rules: { allow: [], deny: [] } },
      policy: { baseUrl: `${origin}/policy`, timeoutMs: 10_000 },
    },
    (error) => {
      throw error;
    },
  );
  const event = facilityEventText();
  const exchanges: Array<[string, (n: number) => Promise<void>]> = [
    [
      'policy call',
      async (n) => {
        const answer = await outbound.policy!.ask(`user-${n % 3}`, event);
        if (answer.kind !== 'allow') throw new Error(`the policy call got ${JSON.stringify(answer)}`);
      },
    ],
    [
      'delivery, signed',
      async (n) => {
        const signing = { id: `delivery-${n}`, secrets: [SECRET] };
        const answer = await outbound.target.post({ url: `${origin}/target`, auth: {}, body: event, signing });
        if (answer.status !== 204) throw new Error(`the delivery got ${JSON.stringify(answer)}`);
      },
    ],
  ];
  const rows: Row[] = [];
  try {
    for (const [exchange, one] of exchanges) {
      await inFlight(WARM_UP, one);
      const before = { main: mainThreadMs(process.pid), outbound: namedThreadMs(process.pid, OUTBOUND_THREAD_NAME), at: performance.now() };
      await inFlight(MEASURED, one);
      const seconds = (performance.now() - before.at) / 1000;
      rows.push({
        exchange,
        'exchanges/s': MEASURED / seconds,
        'main thread µs/exchange': ((mainThreadMs(process.pid) - before.main) * 1000) / MEASURED,
        'outbound thread µs/exchange': ((namedThreadMs(process.pid, OUTBOUND_THREAD_NAME) - before.outbound) * 1000) / MEASURED,
      });
    }
  } finally {
    await closeAll(outbound, responder);
  }
  return rows;
}

/** `count` exchanges, IN_FLIGHT at a time. */
async function inFlight(count: number, one: (n: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) await one(next++);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
}

async function closeAll(outbound: OutboundThread, responder: Worker): Promise<void> {
  await outbound.close();
  const exited = new Promise((resolve) => responder.once('exit', resolve));
  responder.postMessage('close');
  await exited;
}
