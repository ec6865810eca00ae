#!/usr/bin/env node
/**
 * `svc-notifications`: the server. The composition root, with the builders of src/server/: the
 * only place where the modules are wired together and where the process (argv, env, signals,
 * exit codes) is touched.
 */
import './supported-node.js';
import { readFileSync } from 'node:fs';
import type { FastifyBaseLogger } from 'fastify';
import { createLogger } from './api/logger.js';
import { egressSettings } from './config/egress.js';
import { ConfigError, loadConfig } from './config/load.js';
import { type Config, describeSettings } from './config/settings.js';
import { ExpectedNotifications } from './db/expected-notifications.js';
import type { EgressSettings } from './net/egress-proxy.js';
import { packageInfo } from './package-info.js';
import { pullReader } from './pull/reader.js';
import { sharedReads } from './pull/shared-reads.js';
import { PullWaiters } from './pull/waiters.js';
import { backgroundJobs } from './server/background.js';
import { openServerDatabase, prepareDatabase, sealPlainSecrets } from './server/database.js';
import { buildHttp, CannotListen } from './server/http.js';
import { abandonInFlight, leaseHolder, leaseRelease } from './server/leases.js';
import { type Part, startAll, stopAll, together } from './server/lifecycle.js';
import { followSubscriptionWrites, serverMatcher } from './server/matcher.js';
import { serverMetrics, tracingFromEnvironment } from './server/observability.js';
import { PROGRAM } from './server/program.js';
import { buildRunners } from './server/runners.js';
import { logStartup } from './server/startup-log.js';
import { systemClock } from './time/clock.js';

function usage(): string {
  const settings = describeSettings();
  const flags = settings.flatMap((s) => (s.flag === undefined ? [] : [`[${s.flag} ${s.name.replace('NOTIFICATIONS_', '')}]`]));
  const lines = [
    `usage: ${PROGRAM} ${[...flags, '[--config FILE]'].join(' ')}`,
    '',
    'Runs the event notification router. Settings come from flags, then NOTIFICATIONS_* environment',
    'variables, then the JSON file named by --config, then these defaults:',
    '',
  ];
  for (const s of settings) lines.push(`  ${s.name.padEnd(32)} ${(s.flag ?? '').padEnd(16)} ${s.default.padEnd(28)} ${s.description}`);
  lines.push(
    '',
    `The schema must be current: run \`svc-notifications-cmd dbsync\` first (sqlite::memory: needs none: the server creates it).`,
  );
  return lines.join('\n');
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage());
    return 0;
  }
  if (argv.includes('--version')) {
    console.log(packageInfo().version);
    return 0;
  }
  let config: Config;
  let egress: EgressSettings;
  try {
    config = loadConfig({ argv, env: process.env, readFile: (path) => readFileSync(path, 'utf8') });
    egress = egressSettings(config, process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`${PROGRAM}: ${error.message}`);
      return 1;
    }
    throw error;
  }
  return serve(config, egress);
}

/**
 * The parts are built in dependency order, each from what it uses, and only then started, in the
 * order of one list; a shutdown stops them in the reverse order. No callback refers to a part
 * built after it. Passing a part itself (not a closure over it) lets the compiler reject an
 * order in which it would be used before it exists.
 */
async function serve(config: Config, egress: EgressSettings): Promise<number> {
  const log = createLogger(config.logLevel);
  const tracing = await tracingFromEnvironment(log);
  if (tracing === null) return 1;
  const database = openServerDatabase(config, log);
  if (database === undefined) return 1;
  const clock = systemClock();
  const metrics = serverMetrics(database, clock, log);
  const matcher = serverMatcher(metrics, log);
  // The load reads the table as it is when it begins: what other instances write from then on is polled for.
  const loadStartedAt = clock();
  const prepared = await prepareDatabase(database, matcher);
  if (prepared === undefined) return 1;
  if (config.secretKey !== null) await sealPlainSecrets(database, config.secretKey, log);

  const holder = leaseHolder();
  // Pull readers waiting for their subscriptions' next events (one registry for this instance).
  const waiters = new PullWaiters();
  const base = { config, log, database, clock, metrics, matcher };
  const runners = buildRunners({
    ...base,
    egress,
    waiters,
    tracing,
    holder,
    // While the listener listens, this instance hears its own rows announced as the others do:
    // woken here too, its readers would read twice for one commit.
    onReadable: (subscription) => {
      if (!jobs.listening()) waiters.wake(subscription);
    },
  });
  const { outbound, settler, deliveries, policy } = runners;
  const pullReads = sharedReads(pullReader({ database, clock, databaseTimeoutMs: config.databaseTimeoutMs, metrics }), waiters, () =>
    jobs.readableAnnounced(),
  );
  const onChange = followSubscriptionWrites(matcher, deliveries, pullReads);
  // Instances sharing the database hear of each other's writes; their own creates they apply at once.
  const expected = database.capabilities.sharedByInstances ? new ExpectedNotifications() : undefined;
  const wakeRunners = () => {
    policy.wake();
    deliveries.wake();
  };
  const jobs = backgroundJobs({ ...base, waiters, onChange, expected, loadedFrom: prepared.loadedFrom, loadStartedAt, wakeRunners });
  const http = await buildHttp({ ...base, egress, tracing, runners, holder, waiters, pullReads, onChange, expected });

  // Stopped in reverse: no new requests, then no new work, then what is left recorded, the
  // leases given back, the outbound thread and the database closed, and the last spans exported.
  const parts: Part[] = [
    ...(tracing ? [{ name: 'tracing', stop: () => tracing.shutdown() }] : []),
    { name: 'database', stop: () => database.close() },
    { name: 'outbound thread', stop: () => outbound.close() },
    leaseRelease(database, holder),
    { name: 'settler', stop: () => settler.close() },
    together('runners and background jobs', [
      ...jobs.parts,
      { name: 'delivery runner', start: () => deliveries.start(), stop: () => deliveries.stop() },
      { name: 'policy runner', start: () => policy.start(), stop: () => policy.stop() },
    ]),
    http,
  ];
  logStartup(config, egress, log);
  const stopped = stopOnSignals(log, config.shutdownGraceMs, () => stopAll(parts), abandonInFlight({ database, holder, tracing, log }));
  try {
    await startAll(parts);
  } catch (error) {
    if (!(error instanceof CannotListen)) throw error;
    console.error(`${PROGRAM}: ${error.message}`);
    await database.close();
    return 1;
  }
  return stopped;
}

/**
 * Resolves with the exit code once SIGTERM or SIGINT has been handled: 0 once `shutdown` has
 * run, or once `abandon` has run when `shutdown` is still going after `graceMs` (a target or the
 * policy service holding a call); 1 when either fails.
 */
function stopOnSignals(
  log: FastifyBaseLogger,
  graceMs: number,
  shutdown: () => Promise<void>,
  abandon: () => Promise<void>,
): Promise<number> {
  let stopping = false;
  return new Promise<number>((resolve) => {
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down: no new requests, finishing those in flight');
      const force = setTimeout(() => {
        log.warn(`shutdown is taking longer than its grace of ${graceMs} ms: exiting without the calls still in flight`);
        abandon().then(
          () => resolve(0),
          (error: unknown) => {
            log.error({ err: error }, 'could not release the rows in flight; their leases run out instead');
            resolve(1);
          },
        );
      }, graceMs);
      force.unref();
      shutdown().then(
        () => resolve(0),
        (error: unknown) => {
          log.error({ err: error }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`${PROGRAM}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
