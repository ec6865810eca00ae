/**
 * POST /receive against the server process with 1,000 subscriptions (about three matching
 * each event, all to one counting keep-alive target): events/s with p50/p99, then how fast the
 * deliveries reach the target end to end (allow-all policy).
 */
import autocannon from 'autocannon';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningServer } from '../test/support/processes.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

const SUBSCRIPTIONS = 1_000;
const PROJECTS = 333; // 1,000 subscriptions over 333 projects: three match each event
const DURATION_S = 10;
const CONNECTIONS = 32;
const DRAIN_TIMEOUT_MS = 120_000;
const QUIET_MS = 2_000;

export async function benchReceive(label: string, url: string): Promise<Row> {
  let delivered = 0;
  let lastDelivery = 0;
  const target = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      delivered++;
      lastDelivery = performance.now();
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/hook`;
  const server = await startBenchServer(url);
  try {
    await createSubscriptions(server, targetUrl);
    let sequence = 0;
    const started = performance.now();
    const result = await autocannon({
      url: `${server.url}/receive`,
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json' },
      connections: CONNECTIONS,
      duration: DURATION_S,
      requests: [{ setupRequest: (request) => ({ ...request, body: ingestEvent(`${label}-${Date.now()}-${sequence++}`) }) }],
    });
    const received = result['2xx'];
    // Requests still in flight when autocannon stops are answered too: wait for the deliveries
    // to stop coming rather than for a count.
    const drainDeadline = performance.now() + DRAIN_TIMEOUT_MS;
    while (performance.now() < drainDeadline && (delivered < received * 3 || performance.now() - lastDelivery < QUIET_MS)) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (lastDelivery - started) / 1000;
    return {
      database: label,
      'events/s': received / DURATION_S,
      'non-2xx': result.non2xx + result.errors,
      'p50 ms': result.latency.p50,
      'p99 ms': result.latency.p99,
      deliveries: delivered,
      'deliveries/s end to end': delivered / seconds,
    };
  } finally {
    await server.stop();
    target.closeAllConnections();
    target.close();
  }
}

async function createSubscriptions(server: RunningServer, targetUrl: string): Promise<void> {
  const headers = { 'content-type': 'application/json', 'http-remote-user': 'bench' };
  for (let start = 0; start < SUBSCRIPTIONS; start += 100) {
    await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const project = (start + i) % PROJECTS;
        const response = await fetch(`${server.url}/eventmatch`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            name: `project ${project}`,
            jsonpath: `$.data[?@.destinationTable == 'Transactions.project' && @.value == '${project}']`,
            target_url: targetUrl,
          }),
        });
        if (response.status !== 200) throw new Error(`creating a subscription: ${response.status} ${await response.text()}`);
      }),
    );
  }
}

/** A facility ingest event in CloudEvents 1.0, naming one of the projects. */
function ingestEvent(id: string): string {
  const project = Math.floor(Math.random() * PROJECTS);
  return JSON.stringify({
    specversion: '1.0',
    id,
    source: '/pacifica/metadata/ingest',
    type: 'org.pacifica.metadata.ingest',
    datacontenttype: 'application/json',
    data: [
      { destinationTable: 'Transactions._id', value: 1234 },
      { destinationTable: 'Transactions.project', value: String(project) },
      { destinationTable: 'Transactions.submitter', value: 10 },
      { destinationTable: 'Files', name: 'foo.txt', mimetype: 'text/plain', size: 128, hashsum: 'f1d2d2f924e986ac86fdf7b36c94bcdf32beec15' },
    ],
  });
}
