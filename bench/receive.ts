/**
 * /receive against the server process, with 999 subscriptions of which three match each event,
 * the three of three different owners (so each event is three policy calls and three
 * deliveries: seven HTTP exchanges with the /receive request), all delivering to one counting
 * keep-alive target:
 * - throughput: events/s with p50/p99 under as much load as 32 connections make, then how
 *   fast the deliveries reach the target end to end;
 * - burst: the same load while the target answers each delivery after 1 s, so what /receive
 *   takes in is measured apart from what the machine spends delivering; then, the target
 *   answering at once again, the time until every answered event was delivered;
 * - latency: at a fixed offered 1,000 events/s, after a warm-up at that rate, the time from
 *   sending an event to its delivery, p50/p99;
 * - sustained: a minute at an offered load above 5,000 deliveries/s, and the deliveries/s
 *   the target saw over that minute.
 * - tracing: a fixed pace with tracing off, then on, exporting to a sink (otlp-sink.ts): the CPU
 *   each event costs, and the latencies.
 * The policy service is a stub answering 204 (allow) at once, as fast as the target.
 * The ceiling is a bare Fastify process parsing the same bodies under the same load.
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import type { RunningServer } from '../test/support/processes.js';
import { type CountingTarget, startCountingTarget } from './counting-target.js';
import { type CpuTimes, cpuRow, measureCpu } from './cpu-time.js';
import { percentile } from './measure.js';
import { startOtlpSink } from './otlp-sink.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

export const SUBSCRIPTIONS = 999;
const PROJECTS = 333; // 999 subscriptions over 333 projects: exactly three match each event
export const MATCHES_PER_EVENT = SUBSCRIPTIONS / PROJECTS;
/** The three subscriptions of a project belong to three users: one policy call each. */
const OWNERS = MATCHES_PER_EVENT;
/** HTTP exchanges the server takes part in for one event: the /receive, the policy calls, the deliveries. */
export const EXCHANGES_PER_EVENT = 1 + OWNERS + MATCHES_PER_EVENT;
const THROUGHPUT_S = 10;
const CONNECTIONS = 32;
const LATENCY_RATE = 1_000;
const LATENCY_S = 10;
const WARM_UP_S = 5;
const PACE_MS = 10;
const SUSTAINED_RATE = 2_000; // events/s: 6,000 deliveries/s offered
const SUSTAINED_S = 60;
const QUIET_MS = 2_000;
const DRAIN_TIMEOUT_MS = 180_000;
/** How long the burst section's target takes to answer each delivery. */
export const BURST_TARGET_DELAY_MS = 1_000;
/**
 * Connections to the burst section's target (the most the setting takes). With answers taking
 * a second, an origin's window stays at its connections, so the default 16 would deliver
 * 16/s and the backlog of a 10 s burst would take an hour; at 1,024 the server's 1,024 rows in
 * flight bound it, ~1,000 deliveries/s.
 */
export const BURST_TARGET_CONCURRENCY = '1024';
/** Longer than the target's delay: no answer for this long means nothing more is coming. */
const BURST_QUIET_MS = 5_000;

/**
 * Events/s a bare Fastify process answers for the same requests: what the machine allows. With
 * `cpu`, what each request cost it in CPU is added there.
 */
export async function benchCeiling(cpu?: Row[]): Promise<number> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./bare-fastify.js', import.meta.url))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const [port] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
    const { result, perEvent } = await measuredLoad(child.pid!, `http://127.0.0.1:${port}/receive`, 'ceiling');
    cpu?.push(cpuRow('ceiling', 'none', result['2xx'], THROUGHPUT_S, perEvent));
    return result['2xx'] / THROUGHPUT_S;
  } finally {
    child.kill('SIGTERM');
  }
}

/** `cpu` takes what each event cost in CPU while the load ran (see cpu-time.ts). */
export async function benchReceive(label: string, databaseUrl: string, ceiling: number, cpu: Row[]): Promise<Row> {
  return withService(databaseUrl, {}, async (server, target, policy) => {
    const started = performance.now();
    const { result, perEvent } = await measuredLoad(server.process.pid!, `${server.url}/receive`, label);
    const received = result['2xx'];
    cpu.push(cpuRow('receive', label, received, THROUGHPUT_S, perEvent));
    // Requests still in flight when autocannon stops are answered too: wait for the
    // deliveries to stop coming rather than for a count.
    await target.settle(QUIET_MS, DRAIN_TIMEOUT_MS);
    return {
      ...intakeColumns(label, result, ceiling, (eventsPerSecond) => ({
        'in exchanges': (eventsPerSecond * EXCHANGES_PER_EVENT) / ceiling,
      })),
      'deliveries/s end to end': target.delivered() / ((target.lastDeliveryAt() - started) / 1000),
      // Checks the workload: three owners, so three policy calls for each event delivered.
      'policy calls/event': policy.delivered() / (target.delivered() / MATCHES_PER_EVENT),
      'all delivered': allDelivered(target.delivered(), received),
    };
  });
}

/** How the tracing section runs the service: without an endpoint, then exporting with each protocol. */
const TRACING = [
  { tracing: 'off', protocol: undefined },
  { tracing: 'on, http/protobuf', protocol: 'http/protobuf' },
  { tracing: 'on, http/json', protocol: 'http/json' },
] as const;
/** Events/s offered in the tracing section (a whole number per PACE_MS step): a pace the machine keeps even while other work shares it. */
const TRACING_RATE = 300;
const TRACING_S = 10;
const TRACING_WARM_UP_S = 3;
/** Each way is run this many times, the ways taking turns, and the least disturbed run is shown. */
const TRACING_ROUNDS = 3;

/**
 * What tracing costs: the receive section's workload at a fixed pace, with tracing off, then on
 * (each protocol), exporting to a sink that answers at once (otlp-sink.ts). Each event is seven
 * spans: its receive, three policy calls, three delivery attempts. At a fixed pace, the CPU
 * each event costs compares between the ways even while the machine's speed drifts, where a
 * throughput under full load would not; of each way's runs, the one whose server process spent
 * the least per event is shown (the one the rest of the machine disturbed least).
 */
export async function benchTracing(
  eachDatabase: (bench: (label: string, databaseUrl: string) => Promise<Row>) => Promise<Row[]>,
): Promise<Row[]> {
  const runs: Row[] = [];
  for (let round = 0; round < TRACING_ROUNDS; round++) {
    // A fresh database each run: a run's subscriptions would add to the next one's matches.
    for (const { tracing, protocol } of TRACING)
      runs.push(...(await eachDatabase((label, url) => tracedRun(label, url, tracing, protocol))));
  }
  const databases = [...new Set(runs.map((run) => run.database))];
  const cost = (run: Row) => run['server process ms/event'] as number;
  return databases.flatMap((database) =>
    TRACING.map(({ tracing }) => {
      const own = runs.filter((run) => run.database === database && run.tracing === tracing);
      const least = own.reduce((a, b) => (cost(b) < cost(a) ? b : a));
      const most = own.reduce((a, b) => (cost(b) > cost(a) ? b : a));
      return { ...least, 'server process ms/event, every run': `${cost(least).toFixed(2)}–${cost(most).toFixed(2)}` };
    }),
  );
}

async function tracedRun(label: string, databaseUrl: string, tracing: string, protocol: string | undefined): Promise<Row> {
  const sink = await startOtlpSink();
  const env: Record<string, string> =
    protocol === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol };
  try {
    let events = 0;
    const row = await withService(databaseUrl, { env, timeArrivals: true }, async (server, target) => {
      const url = `${server.url}/receive`;
      const warmUp = await pacedLoad(url, `${label}-${tracing}-warm-up`, TRACING_WARM_UP_S, TRACING_RATE);
      await target.settle(QUIET_MS, DRAIN_TIMEOUT_MS);
      target.arrivals.clear();
      const sent = new Map<string, number>();
      const { result: answered, perEvent } = await measureCpu(
        server.process.pid!,
        () => pacedLoad(url, `${label}-${tracing}`, TRACING_S, TRACING_RATE, sent),
        (result) => result.ok,
      );
      await target.settle(QUIET_MS, DRAIN_TIMEOUT_MS);
      events = warmUp.ok + answered.ok;
      const latencies = [...target.arrivals].flatMap(([id, times]) => times.map((t) => t - (sent.get(id) ?? NaN)));
      return {
        database: label,
        tracing,
        'answered events/s': answered.ok / TRACING_S,
        'non-2xx': warmUp.failed + answered.failed,
        'receive p99 ms': percentile(answered.latencies, 99),
        'to delivered p50 ms': percentile(latencies, 50),
        'to delivered p99 ms': percentile(latencies, 99),
        'main thread ms/event': perEvent.main,
        'server process ms/event': perEvent.process,
        'all delivered': allDelivered(target.delivered(), events),
      };
    });
    // Counted once the server has stopped, which exported the last of them.
    return {
      ...row,
      'spans/event': protocol === undefined ? 0 : sink.spans() / events,
      'exported bytes/event': sink.bytes() / events,
    };
  } finally {
    await sink.close();
  }
}

/**
 * Intake apart from delivery: the same load as benchReceive while the target answers each
 * delivery after a second, so few deliveries finish during the 10 s (at most ~1,000/s, see
 * BURST_TARGET_CONCURRENCY) and the events pile up in the queue. Then, the target answering
 * at once, every answered event must be delivered: the time from the end of the load to the
 * last delivery's answer.
 */
export async function benchBurst(label: string, databaseUrl: string, ceiling: number, cpu: Row[]): Promise<Row> {
  const options = { delayMs: BURST_TARGET_DELAY_MS, env: { NOTIFICATIONS_TARGET_CONCURRENCY: BURST_TARGET_CONCURRENCY } };
  return withService(databaseUrl, options, async (server, target) => {
    const { result, perEvent } = await measuredLoad(server.process.pid!, `${server.url}/receive`, label);
    const loadEnded = performance.now();
    const received = result['2xx'];
    cpu.push(cpuRow('burst', label, received, THROUGHPUT_S, perEvent));
    const duringLoad = target.delivered();
    // The burst is over and the target recovers: the drain measures catching up, not the
    // target's delay times the backlog.
    target.answerAtOnce();
    await target.reach(received * MATCHES_PER_EVENT, BURST_QUIET_MS, DRAIN_TIMEOUT_MS);
    // Requests in flight when autocannon stopped were answered too, and are delivered too.
    await target.settle(BURST_QUIET_MS, DRAIN_TIMEOUT_MS);
    return {
      ...intakeColumns(label, result, ceiling),
      'delivered during the load': duringLoad,
      'drained in s': (target.lastDeliveryAt() - loadEnded) / 1000,
      'all delivered': allDelivered(target.delivered(), received),
    };
  });
}

/** What a `/receive` load under autocannon measured: its rate, against the ceiling (and `more` of it), failures, latency. */
function intakeColumns(
  label: string,
  result: autocannon.Result,
  ceiling: number,
  more: (eventsPerSecond: number) => Row = () => ({}),
): Row {
  const eventsPerSecond = result['2xx'] / THROUGHPUT_S;
  return {
    database: label,
    'events/s': eventsPerSecond,
    'of ceiling': eventsPerSecond / ceiling,
    ...more(eventsPerSecond),
    'non-2xx': result.non2xx + result.errors,
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
  };
}

function allDelivered(delivered: number, events: number): string {
  return delivered >= events * MATCHES_PER_EVENT ? 'yes' : `${delivered} of ${events * MATCHES_PER_EVENT}`;
}

export async function benchLatency(label: string, databaseUrl: string): Promise<Row> {
  return withService(databaseUrl, { timeArrivals: true }, async (server, target) => {
    // A freshly started process delivers slowly for its first seconds (JIT, connections):
    // the same load for a few seconds first, not measured.
    await pacedLoad(`${server.url}/receive`, `${label}-warm-up`, WARM_UP_S, LATENCY_RATE);
    await target.settle(QUIET_MS, DRAIN_TIMEOUT_MS);
    target.arrivals.clear();
    const sent = new Map<string, number>();
    const answered = await pacedLoad(`${server.url}/receive`, label, LATENCY_S, LATENCY_RATE, sent);
    await target.settle(QUIET_MS, DRAIN_TIMEOUT_MS);
    const latencies: number[] = [];
    for (const [id, times] of target.arrivals) {
      const at = sent.get(id);
      if (at !== undefined) for (const t of times) latencies.push(t - at);
    }
    return {
      database: label,
      'offered events/s': LATENCY_RATE,
      'answered events/s': answered.ok / LATENCY_S,
      'non-2xx': answered.failed,
      deliveries: latencies.length,
      'receive p99 ms': percentile(answered.latencies, 99),
      'to delivered p50 ms': percentile(latencies, 50),
      'to delivered p99 ms': percentile(latencies, 99),
      'to delivered max ms': percentile(latencies, 100),
      'all delivered': allDelivered(latencies.length, answered.ok),
    };
  });
}

/**
 * Events sent evenly, `rate` a second in steps of PACE_MS, whether or not earlier ones
 * were answered. (autocannon's rate sends each connection's share of a second at once at the
 * start of the second: bursts, not a steady load.)
 */
export async function pacedLoad(
  url: string,
  label: string,
  seconds: number,
  rate: number,
  sent = new Map<string, number>(),
): Promise<{ ok: number; failed: number; latencies: number[] }> {
  const pool = new Pool(new URL(url).origin, { connections: CONNECTIONS });
  const path = new URL(url).pathname;
  const latencies: number[] = [];
  const requests: Array<Promise<void>> = [];
  let ok = 0;
  let failed = 0;
  const perStep = (rate * PACE_MS) / 1000;
  const started = performance.now();
  for (let step = 0; step < (seconds * 1000) / PACE_MS; step++) {
    const wait = started + step * PACE_MS - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    for (let i = 0; i < perStep; i++) {
      const id = `${label}-${step}-${i}`;
      const at = performance.now();
      sent.set(id, at);
      requests.push(
        pool
          .request({ method: 'POST', path, headers: { 'content-type': 'application/cloudevents+json' }, body: ingestEvent(id) })
          .then(async (response) => {
            await response.body.dump();
            latencies.push(performance.now() - at);
            if (response.statusCode === 200) ok++;
            else failed++;
          }),
      );
    }
  }
  await Promise.all(requests);
  await pool.close();
  return { ok, failed, latencies };
}

export async function benchSustained(label: string, databaseUrl: string): Promise<Row> {
  return withService(databaseUrl, {}, async (server, target) => {
    const started = performance.now();
    const answered = await pacedLoad(`${server.url}/receive`, label, SUSTAINED_S, SUSTAINED_RATE);
    const inTheMinute = target.delivered();
    const minuteS = (performance.now() - started) / 1000;
    await target.settle(QUIET_MS, DRAIN_TIMEOUT_MS);
    return {
      database: label,
      'offered deliveries/s': SUSTAINED_RATE * MATCHES_PER_EVENT,
      // Over the time the answers took: when the server answers slower than events are offered,
      // the "minute" lasts until the last answer.
      'load s': minuteS,
      'answered events/s': answered.ok / minuteS,
      'non-2xx': answered.failed,
      'deliveries/s over the minute': inTheMinute / minuteS,
      'backlog drained in s': (target.lastDeliveryAt() - started) / 1000 - minuteS,
      'all delivered': allDelivered(target.delivered(), answered.ok),
    };
  });
}

async function withService<T>(
  databaseUrl: string,
  options: { timeArrivals?: boolean; delayMs?: number; env?: Record<string, string> },
  run: (server: RunningServer, target: CountingTarget, policy: CountingTarget) => Promise<T>,
): Promise<T> {
  const target = await startCountingTarget(options);
  const policy = await startCountingTarget();
  const server = await startBenchServer(databaseUrl, { NOTIFICATIONS_POLICY_URL: policy.url, ...options.env });
  try {
    await createSubscriptions(server, target.url);
    return await run(server, target, policy);
  } finally {
    await server.stop();
    await target.close();
    await policy.close();
  }
}

/** `load`, and the CPU each answered request cost while it ran (see cpu-time.ts). */
function measuredLoad(pid: number, url: string, label: string): Promise<{ result: autocannon.Result; perEvent: CpuTimes }> {
  return measureCpu(
    pid,
    () => load(url, label, THROUGHPUT_S),
    (result) => result['2xx'],
  );
}

/** As many events as CONNECTIONS connections send, each as soon as the previous one is answered. */
function load(url: string, label: string, duration: number): Promise<autocannon.Result> {
  let sequence = 0;
  const run = `${label}-${Date.now()}`;
  return autocannon({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    connections: CONNECTIONS,
    duration,
    requests: [{ setupRequest: (request) => ({ ...request, body: ingestEvent(`${run}-${sequence++}`) }) }],
  });
}

/** Subscription i is to project i % PROJECTS, owned by user ⌊i / PROJECTS⌋: a project's three have three owners. */
export async function createSubscriptions(server: RunningServer, targetUrl: string): Promise<void> {
  for (let start = 0; start < SUBSCRIPTIONS; start += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, SUBSCRIPTIONS - start) }, async (_, i) => {
        const project = (start + i) % PROJECTS;
        const owner = `bench-${Math.floor((start + i) / PROJECTS)}`;
        const response = await fetch(`${server.url}/eventmatch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'http-remote-user': owner },
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
      {
        destinationTable: 'Files',
        name: 'foo.txt',
        mimetype: 'text/plain',
        size: 128,
        hashsum: 'f1d2d2f924e986ac86fdf7b36c94bcdf32beec15',
      },
    ],
  });
}
