/**
 * POST /eventmatch against the real server process (a fresh database, schema synced first),
 * driven by autocannon over keep-alive connections: creates per second and latency.
 */
import autocannon from 'autocannon';
import { cpuRow, measureCpu } from './cpu-time.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

const DURATION_S = 10;
const CONNECTIONS = 32;
/**
 * The creates are spread over this many users, each well under NOTIFICATIONS_USER_SUBSCRIPTIONS
 * (1,000) for the run: every create is counted against its user's limit, none is refused.
 */
const USERS = 1_000;

/** `cpu` takes what each create cost in CPU while the load ran (see cpu-time.ts). */
export async function benchCreates(label: string, url: string, ceiling: number, cpu: Row[]): Promise<Row> {
  const server = await startBenchServer(url);
  let sequence = 0;
  try {
    const body = JSON.stringify({
      name: 'text files of project 1234',
      jsonpath: "$.data[?@.destinationTable == 'Transactions.project' && @.value == '1234']",
      target_url: 'http://127.0.0.1:9/hook',
      auth: { type: 'basic', basic: { username: 'pipeline', password: 'secret' } },
    });
    const { result, perEvent } = await measureCpu(
      server.process.pid!,
      () =>
        autocannon({
          url: `${server.url}/eventmatch`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          connections: CONNECTIONS,
          duration: DURATION_S,
          requests: [
            {
              setupRequest: (request) => ({
                ...request,
                headers: { ...request.headers, 'http-remote-user': `bench-${sequence++ % USERS}` },
              }),
            },
          ],
        }),
      (done) => done['2xx'],
    );
    const ok = result['2xx'];
    cpu.push(cpuRow('creates', label, ok, DURATION_S, perEvent));
    return {
      database: label,
      'creates/s': ok / DURATION_S,
      'of ceiling': ok / DURATION_S / ceiling,
      'non-2xx': result.non2xx + result.errors,
      'latency p50 ms': result.latency.p50,
      'latency p99 ms': result.latency.p99,
    };
  } finally {
    await server.stop();
  }
}
