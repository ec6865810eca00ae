/**
 * `import-pacifica`: an original service's database on PostgreSQL with 200 subscriptions of 20
 * users and a log of 200,000 events (the facility's example event, 2 KB, each with its own id)
 * and 320,000 matches (every event one, three in five a second), imported by the real CLI into
 * a fresh database of this service. Reported: log rows (events and matches) a second over the
 * whole run (from the command's start, subscriptions and counting included), the peak resident
 * memory the command reports of itself (getrusage), and the time of a second run, which finds
 * everything present.
 */
import { performance } from 'node:perf_hooks';
import { facilityEventText } from '../test/support/fixtures.js';
import { createPostgresOriginal, type OriginalDatabaseFixture } from '../test/support/original-service.js';
import { CLI_BIN, run as runProgram, runCli } from '../test/support/processes.js';
import type { Row } from './table.js';

export const IMPORT_EVENTS = 200_000;
const SUBSCRIPTIONS = 200;
const USERS = 20;
/** Events whose number modulo 5 is below this have a second match: three in five. */
const SECOND_MATCH_BELOW = 3;
const IMPORT_TIMEOUT_MS = 600_000;

/** The original's database, filled by PostgreSQL itself (generate_series): a minute of inserts from here otherwise. */
export async function originalForBench(base: string): Promise<OriginalDatabaseFixture> {
  const original = await createPostgresOriginal(base);
  await original.exec(
    `insert into eventmatch (uuid, name, jsonpath, "user", target_url, version, extensions, created, updated, auth)
     select md5('s' || n)::uuid, 'pipeline ' || n, '$.data[?(@.key == "Transactions._id")]', 'user' || (n % ${USERS}),
       'http://127.0.0.1:9/' || n, 'v0.1', '{}', timestamp '2020-01-01' + n * interval '1 minute',
       timestamp '2020-01-01' + n * interval '1 minute', null
     from generate_series(1, ${SUBSCRIPTIONS}) n`,
  );
  await original.exec(
    `insert into eventlog (uuid, jsondata, created)
     select md5('e' || g)::uuid, replace($1, 'C234-1234-1234', 'ev-' || g), timestamp '2021-01-01' + g * interval '1 second'
     from generate_series(1, ${IMPORT_EVENTS}) g`,
    [facilityEventText()],
  );
  await original.exec(
    `insert into eventlogmatch (uuid, event_log_id, event_match_id, policy_status_code, policy_resp_body, target_status_code, target_resp_body, created)
     select md5('m' || k || '-' || g)::uuid, md5('e' || g)::uuid, md5('s' || (1 + (g + k) % ${SUBSCRIPTIONS}))::uuid, '200', '', '200', '',
       timestamp '2021-01-01' + g * interval '1 second' + k * interval '1 millisecond'
     from generate_series(1, ${IMPORT_EVENTS}) g, generate_series(1, 2) k
     where k = 1 or g % 5 < ${SECOND_MATCH_BELOW}`,
  );
  await original.exec('analyze');
  return original;
}

/** One import into `url` (a fresh, dbsync'd database) and a second run; the figures as a row. */
export async function benchImport(original: OriginalDatabaseFixture, label: string, url: string): Promise<Row> {
  const sync = await runCli(['--database-url', url, 'dbsync']);
  if (sync.code !== 0) throw new Error(`dbsync failed: ${sync.stderr}`);
  const args = ['--database-url', url, 'import-pacifica', '--from', original.url, '--timezone', 'UTC'];
  const started = performance.now();
  const first = await run(args);
  const seconds = (performance.now() - started) / 1000;
  const rows = Number(/^events: (\d+) new/m.exec(first)?.[1]) + Number(/^matches: (\d+) new/m.exec(first)?.[1]);
  const peakMb = Number(/peak resident memory (\d+) MB/.exec(first)?.[1]);
  const againStarted = performance.now();
  await run(args);
  return {
    into: label,
    'log rows': rows,
    s: seconds,
    'log rows/s': Math.round(rows / seconds),
    'peak resident MB': peakMb,
    'second run s': (performance.now() - againStarted) / 1000,
  };
}

async function run(args: string[]): Promise<string> {
  const result = await runProgram(CLI_BIN, args, {}, IMPORT_TIMEOUT_MS);
  if (result.code !== 0) throw new Error(`import-pacifica exited with ${result.code}:\n${result.stdout}${result.stderr}`);
  return result.stdout;
}
