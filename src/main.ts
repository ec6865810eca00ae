#!/usr/bin/env node
/**
 * `svc-notifications`: the server. The composition root: the only place where the modules
 * are wired together and where the process (argv, env, signals, exit codes) is touched.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { buildApp } from './api/app.js';
import { deliveriesRoutes } from './api/deliveries-routes.js';
import { eventmatchRoutes } from './api/eventmatch-routes.js';
import { healthRoutes } from './api/health.js';
import { metricsRoutes } from './api/metrics-routes.js';
import { receiveRoutes } from './api/receive-routes.js';
import { ConfigError, loadConfig } from './config/load.js';
import { describeSettings, redactedConfig, type Config } from './config/settings.js';
import { DatabaseMissing, openDatabase, type DatabaseHandle } from './db/connect.js';
import { releaseAllLeases, releaseLeasesOf } from './db/matches.js';
import { schemaStatus, syncSchema } from './db/migrate.js';
import { queueReader } from './db/queue-stats.js';
import { liveSubscriptionPages, type SubscriptionChange } from './db/subscriptions.js';
import { addressGuard } from './delivery/address-guard.js';
import { startOutboundThread } from './delivery/outbound-thread.js';
import { LiveMatcher } from './matching/live-matcher.js';
import { createMetrics } from './metrics/registry.js';
import { allowAll } from './policy/policy-client.js';
import { EventLogBatch } from './events/event-log-batch.js';
import { deliveryStep } from './routing/delivery-stage.js';
import { ClaimPacer } from './routing/claim-pacer.js';
import { Handoff } from './routing/handoff.js';
import { policyStep } from './routing/policy-stage.js';
import { startSubscriptionSync } from './routing/subscription-sync.js';
import { startWorkerLoop } from './routing/worker-loop.js';
import { packageInfo } from './package-info.js';
import { systemClock } from './time/clock.js';

const PROGRAM = 'svc-notifications';
/** Other instances' work (PostgreSQL) and retries coming due are found by polling this often. */
const POLL_MS = 1_000;
const MAX_ERROR_PAUSE_MS = 30_000;
const STAGE_BATCH = 128;
/** Batches in flight at once per stage: a batch waits for its slowest target (or policy answer). */
const DELIVERY_CONCURRENCY = 4;
const POLICY_CONCURRENCY = 4;
/** Rows waiting in memory for each stage (see routing/handoff.ts): two rounds of batches. */
const HANDOFF_ROWS = 2 * POLICY_CONCURRENCY * STAGE_BATCH;
/** A stage's claim that found nothing is not repeated sooner (routing/claim-pacer.ts). */
const QUIET_CLAIM_MS = 100;
/** A stage busy with new work still claims this often, for retries and other instances' rows. */
const BUSY_CLAIM_MS = POLL_MS;
const CONNECTIONS_PER_TARGET = 16;
/** Other instances' subscription writes are polled for this often, or this seldom while NOTIFY works. */
const SUBSCRIPTION_REFRESH_MS = 500;
const SUBSCRIPTION_REFRESH_LISTENING_MS = 5_000;
/** Ten seconds of clock skew between instances is tolerated. */
const SUBSCRIPTION_REFRESH_WINDOW_US = 10_000_000;

function usage(): string {
  const lines = [
    `usage: ${PROGRAM} [--address ADDR] [--port N] [--database-url URL] [--config FILE]`,
    '',
    'Runs the event notification router. Settings come from flags, then NOTIFICATIONS_* environment',
    'variables, then the JSON file named by --config, then these defaults:',
    '',
  ];
  for (const s of describeSettings()) lines.push(`  ${s.name.padEnd(32)} ${s.default.padEnd(28)} ${s.description}`);
  lines.push('', `The schema must be current: run \`svc-notifications-cmd dbsync\` first (sqlite::memory: needs none: the server creates it).`);
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
  try {
    config = loadConfig({ argv, env: process.env, readFile: (path) => readFileSync(path, 'utf8') });
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`${PROGRAM}: ${error.message}`);
      return 1;
    }
    throw error;
  }
  return serve(config);
}

async function serve(config: Config): Promise<number> {
  let database: DatabaseHandle;
  try {
    database = openDatabase(config.databaseUrl, { create: false });
  } catch (error) {
    if (error instanceof DatabaseMissing) {
      console.error(`${PROGRAM}: the database schema is out of date (${error.message}): run \`svc-notifications-cmd dbsync\` to create it`);
      return 1;
    }
    console.error(`${PROGRAM}: cannot open the database: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  try {
    // Nothing but this process can reach an in-memory database, so no dbsync could prepare it.
    if (database.inMemory) await syncSchema(database);
    const status = await schemaStatus(database);
    if (status.pending.length > 0) {
      console.error(`${PROGRAM}: the database schema is out of date (${database.description} lacks ${status.pending.join(', ')}): run \`svc-notifications-cmd dbsync\``);
      await database.close();
      return 1;
    }
  } catch (error) {
    console.error(`${PROGRAM}: cannot use the database ${database.description}: ${error instanceof Error ? error.message : String(error)}`);
    await database.close();
    return 1;
  }

  const clock = systemClock();
  const policyMode = config.policyUrl ? 'policy-service' : 'allow-all';
  if (!database.capabilities.sharedByInstances) await releaseAllLeases(database.db);
  const matcher = new LiveMatcher({
    onUnusable: (uuid, error) =>
      app.log.warn({ subscription: uuid, error: String(error) }, 'subscription left out of matching: its stored expression no longer compiles'),
  });
  const metrics = createMetrics({
    queue: { reader: queueReader(database.db), clock, onError: (error) => app.log.warn({ err: error }, 'metrics: cannot read the queue from the database') },
  });
  // A handed row must have half its lease left: time enough for a policy call or a delivery.
  const leaseUs = config.leaseMs * 1000;
  const toPolicy = new Handoff(HANDOFF_ROWS, leaseUs / 2);
  const toDelivery = new Handoff(HANDOFF_ROWS, leaseUs / 2);
  const stage = {
    database,
    clock,
    holder: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    leaseUs,
    batchSize: STAGE_BATCH,
    retryDelaysMs: config.retryDelaysMs,
    random: Math.random,
    metrics,
  };
  const app = await buildApp({ maxBodyBytes: config.maxBodyBytes, logLevel: config.logLevel, version: packageInfo().version }, [
    healthRoutes({ database, policyMode }),
    metricsRoutes({ registry: metrics.registry }),
    eventmatchRoutes({
      database,
      clock,
      secretKey: config.secretKey,
      dialectMode: config.jsonpathDialect,
      targetGuard: addressGuard({ allow: config.targetAllow, deny: config.targetDeny }),
      identity: { header: config.userHeader, defaultUser: config.defaultUser },
      onChange: (change: SubscriptionChange) => matcher.apply(change),
    }),
    deliveriesRoutes({ database, identity: { header: config.userHeader, defaultUser: config.defaultUser } }),
    receiveRoutes({
      eventLog: new EventLogBatch(database),
      matcher,
      clock,
      handoff: { to: toPolicy, holder: stage.holder, leaseUs: stage.leaseUs },
      receiveToken: config.receiveToken,
      onReceived: () => policyLoop.wake(),
      metrics,
    }),
  ]);
  const outbound = startOutboundThread(
    {
      target: { timeoutMs: config.targetTimeoutMs, connectionsPerOrigin: CONNECTIONS_PER_TARGET, rules: { allow: config.targetAllow, deny: config.targetDeny } },
      ...(config.policyUrl ? { policy: { baseUrl: config.policyUrl, timeoutMs: config.targetTimeoutMs } } : {}),
    },
    (error) => {
      app.log.fatal({ err: error }, 'exiting: deliveries and policy calls cannot go on; rows in flight return to the queue when their leases expire');
      process.exit(1);
    },
  );
  const { target, policy } = outbound;
  // Loaded once the log exists, since a subscription may need to be reported.
  for await (const page of liveSubscriptionPages(database.db)) matcher.load(page);
  const onLoopError = (name: string) => (error: unknown) => app.log.error({ err: error }, `${name} stage failed; retrying`);
  // Other instances write subscriptions too: their changes reach this matcher by NOTIFY, or a poll.
  const refreshLoop = database.capabilities.sharedByInstances
    ? startSubscriptionSync({
        database,
        url: config.databaseUrl,
        matcher,
        clock,
        pollMs: SUBSCRIPTION_REFRESH_MS,
        listeningPollMs: SUBSCRIPTION_REFRESH_LISTENING_MS,
        skewUs: SUBSCRIPTION_REFRESH_WINDOW_US,
        maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
        log: app.log,
      })
    : undefined;
  const deliveryLoop = startWorkerLoop({
    step: deliveryStep({ ...stage, inbox: toDelivery, pacer: new ClaimPacer(QUIET_CLAIM_MS, BUSY_CLAIM_MS), target, secretKey: config.secretKey, onSubscriptionChange: (change) => matcher.apply(change) }),
    idleMs: POLL_MS,
    maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
    onError: onLoopError('delivery'),
    concurrency: DELIVERY_CONCURRENCY,
    fullBatch: STAGE_BATCH,
  });
  const policyLoop = startWorkerLoop({
    step: policyStep({ ...stage, inbox: toPolicy, next: toDelivery, pacer: new ClaimPacer(QUIET_CLAIM_MS, BUSY_CLAIM_MS), policy: policy ?? allowAll, onAllowed: () => deliveryLoop.wake() }),
    idleMs: POLL_MS,
    maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
    onError: onLoopError('policy'),
    concurrency: POLICY_CONCURRENCY,
    fullBatch: STAGE_BATCH,
  });
  app.log.info({ config: redactedConfig(config) }, 'configuration');
  if (policyMode === 'allow-all') {
    app.log.warn('allow-all mode: NOTIFICATIONS_POLICY_URL is not set, so every subscriber receives every event its subscriptions match');
  }

  let stopping = false;
  const stopped = new Promise<number>((resolve) => {
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      app.log.info({ signal }, 'shutting down: no new requests, finishing those in flight');
      const force = setTimeout(() => {
        app.log.error(`shutdown took longer than ${config.shutdownGraceMs} ms; exiting anyway`);
        resolve(1);
      }, config.shutdownGraceMs);
      force.unref();
      app
        .close()
        .then(() => Promise.all([policyLoop.stop(), deliveryLoop.stop(), refreshLoop?.stop()]))
        .then(() => releaseLeasesOf(database.db, stage.holder))
        .then(() => outbound.close())
        .then(() => database.close())
        .then(() => resolve(0), (error: unknown) => {
          app.log.error({ err: error }, 'shutdown failed');
          resolve(1);
        });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });

  try {
    await app.listen({ host: config.address, port: config.port });
  } catch (error) {
    console.error(`${PROGRAM}: cannot listen on ${config.address}:${config.port}: ${error instanceof Error ? error.message : String(error)}`);
    await database.close();
    return 1;
  }
  return stopped;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`${PROGRAM}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    process.exit(1);
  },
);
