/**
 * Isolation: the time from receive to delivered at a healthy target, at a steady 500 events/s,
 * first alone, then with a second subscription to every event whose target never answers (each
 * of its deliveries runs into NOTIFICATIONS_TARGET_TIMEOUT). Goal: p99 with the hanging target
 * within 1.5 times p99 without it.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningServer } from '../test/support/processes.js';
import { startCountingTarget } from './counting-target.js';
import { percentile } from './measure.js';
import { pacedLoad } from './receive.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

const RATE = 500;
const WARM_UP_S = 3;
const MEASURE_S = 10;
const QUIET_MS = 2_000;
const DRAIN_TIMEOUT_MS = 60_000;
const EVERY_EVENT = "$[?$.source == '/pacifica/metadata/ingest']";

export async function benchIsolation(label: string, databaseUrl: string): Promise<Row> {
  const healthy = await startCountingTarget({ timeArrivals: true });
  const hanging = await startHangingTarget();
  const server = await startBenchServer(databaseUrl);
  try {
    await subscribe(server, healthy.url);
    await pacedLoad(`${server.url}/receive`, `${label}-warm-up`, WARM_UP_S, RATE);
    await healthy.settle(QUIET_MS, DRAIN_TIMEOUT_MS);
    const alone = await measure(server, healthy, `${label}-alone`);
    await subscribe(server, hanging.url);
    const beside = await measure(server, healthy, `${label}-beside`);
    return {
      database: label,
      'events/s': RATE,
      'p99 ms alone': alone.p99,
      'p99 ms beside a hanging target': beside.p99,
      ratio: beside.p99 / alone.p99,
      'p50 ms alone': alone.p50,
      'p50 ms beside': beside.p50,
      'hanging target requests': hanging.requests(),
      'within 1.5x': beside.p99 <= 1.5 * alone.p99 ? 'yes' : 'no',
    };
  } finally {
    await server.stop('SIGKILL');
    await healthy.close();
    await hanging.close();
  }
}

async function measure(
  server: RunningServer,
  healthy: Awaited<ReturnType<typeof startCountingTarget>>,
  label: string,
): Promise<{ p50: number; p99: number }> {
  healthy.arrivals.clear();
  const sent = new Map<string, number>();
  await pacedLoad(`${server.url}/receive`, label, MEASURE_S, RATE, sent);
  await healthy.settle(QUIET_MS, DRAIN_TIMEOUT_MS);
  const latencies: number[] = [];
  for (const [id, times] of healthy.arrivals) {
    const at = sent.get(id);
    if (at !== undefined) for (const t of times) latencies.push(t - at);
  }
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function subscribe(server: RunningServer, targetUrl: string): Promise<void> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'http-remote-user': 'bench' },
    body: JSON.stringify({ name: targetUrl, jsonpath: EVERY_EVENT, target_url: targetUrl }),
  });
  if (response.status !== 200) throw new Error(`creating a subscription: ${response.status} ${await response.text()}`);
}

/** A target that takes every request and never answers. */
async function startHangingTarget(): Promise<{ url: string; requests(): number; close(): Promise<void> }> {
  let requests = 0;
  const held: ServerResponse[] = [];
  const server = createServer((request, response) => {
    requests++;
    request.resume();
    held.push(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
