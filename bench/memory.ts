/**
 * Resident memory of the server process with 100,000 facility-shaped subscriptions loaded:
 * they are written through the subscription service (as POST /eventmatch writes them), then
 * the server starts on that database and its /metrics are read once it answers.
 */
import { openDatabase } from '../src/db/connect.js';
import { subscriptionService } from '../src/subscriptions/service.js';
import { systemClock } from '../src/time/clock.js';
import { Random } from '../test/support/random.js';
import { defaultTargetGuard } from '../test/support/target-guard.js';
import { subscriptionExpression } from './facility-workload.js';
import { MB } from './measure.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

const SUBSCRIPTIONS = 100_000;
const CONCURRENT_CREATES = 200;

export async function benchMemory(label: string, databaseUrl: string): Promise<Row> {
  const server = await startBenchServer(databaseUrl); // syncs the schema; restarted below to load everything
  await server.stop();
  const database = openDatabase(databaseUrl);
  try {
    const service = subscriptionService({
      database,
      clock: systemClock(),
      secretKey: null,
      dialectMode: 'auto',
      userSubscriptions: 1000,
      targetGuard: defaultTargetGuard(),
    });
    const r = new Random(SUBSCRIPTIONS);
    for (let start = 0; start < SUBSCRIPTIONS; start += CONCURRENT_CREATES) {
      await Promise.all(
        Array.from({ length: CONCURRENT_CREATES }, (_, i) =>
          service.create(`user-${(start + i) % 5_000}`, {
            name: `subscription ${start + i}`,
            jsonpath: subscriptionExpression(r),
            target_url: 'http://127.0.0.1:9/hook',
          }),
        ),
      );
    }
  } finally {
    await database.close();
  }
  const started = performance.now();
  const loaded = await startBenchServer(databaseUrl);
  const startMs = performance.now() - started;
  try {
    const metrics = await (await fetch(`${loaded.url}/metrics`)).text();
    const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
    return {
      database: label,
      subscriptions: SUBSCRIPTIONS,
      'start-up s': startMs / 1000,
      'resident MB': read('process_resident_memory_bytes') / MB,
      'heap used MB': read('nodejs_heap_size_used_bytes') / MB,
    };
  } finally {
    await loaded.stop();
  }
}
