#!/usr/bin/env node
/**
 * `svc-notifications`: the server. The composition root: the only place where the modules
 * are wired together and where the process (argv, env, signals, exit codes) is touched.
 */
import './supported-node.js';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { buildApp } from './api/app.js';
import { deliveriesRoutes } from './api/deliveries-routes.js';
import { eventmatchRoutes } from './api/eventmatch-routes.js';
import { eventsRoutes } from './api/events-routes.js';
import { healthRoutes } from './api/health.js';
import { createLogger } from './api/logger.js';
import { metricsRoutes } from './api/metrics-routes.js';
import { receiveRoutes } from './api/receive-routes.js';
import type { Keyring } from './config/keyring.js';
import { ConfigError, loadConfig } from './config/load.js';
import { type Config, describeSettings, redactedConfig } from './config/settings.js';
import { loadConsoleAssets } from './console/assets.js';
import { consoleRoutes } from './console/routes.js';
import { type DatabaseHandle, DatabaseMissing, openDatabase } from './db/connect.js';
import { matchQueue } from './db/match-queue.js';
import { operationalEvents } from './events/operational-events.js';
import { releaseAllLeases, releaseLeasesOf } from './db/matches.js';
import { schemaStatus, syncSchema } from './db/migrate.js';
import { ping } from './db/ping.js';
import { queueReader } from './db/queue-stats.js';
import { isStorageFull, StorageWatch } from './db/storage-full.js';
import { liveSubscriptionPages, type SubscriptionChange } from './db/subscriptions.js';
import { type SubscriptionsState, subscriptionsState } from './db/subscriptions-fingerprint.js';
import { brokerDestination } from './delivery/broker-destination.js';
import { destinationByKind } from './delivery/destination-by-kind.js';
import { startOutboundThread } from './delivery/outbound-thread.js';
import { type DeliveryRunner, deliveryRunner } from './delivery/runner.js';
import { pullDestination } from './delivery/pull-destination.js';
import { pushDestination } from './delivery/push-destination.js';
import { EventLogBatch } from './events/event-log-batch.js';
import { startRetentionPurge } from './events/retention.js';
import { startFallbackPoll } from './pull/fallback-poll.js';
import { pullReader } from './pull/reader.js';
import { type SharedReads, sharedReads } from './pull/shared-reads.js';
import { PullWaiters } from './pull/waiters.js';
import { evaluationErrorReporter } from './matching/evaluation-errors.js';
import { LiveMatcher } from './matching/live-matcher.js';
import { followOtherProcessCommits } from './matching/other-process-commits.js';
import { ExpectedNotifications } from './db/expected-notifications.js';
import { startSubscriptionSync } from './matching/subscription-sync.js';
import { createMetrics } from './metrics/registry.js';
import { addressGuard } from './net/address-guard.js';
import { listensOnLoopbackOnly, peerList } from './net/peer-list.js';
import { packageInfo } from './package-info.js';
import { allowAll } from './policy/policy-client.js';
import { policyRunner } from './policy/runner.js';
import { ClaimPacer } from './routing/claim-pacer.js';
import { Handoff } from './routing/handoff.js';
import { Settler } from './routing/settler.js';
import { sealStoredSecrets } from './subscriptions/seal-at-rest.js';
import { targetConsent } from './subscriptions/target-consent.js';
import { systemClock } from './time/clock.js';
import { within } from './time/within.js';
import { startTracing, type Tracing, TracingConfigError } from './tracing/tracing.js';

const PROGRAM = 'svc-notifications';
/**
 * Other instances' work (PostgreSQL), retries coming due, and other processes' commits to the
 * SQLite file are found by polling this often.
 */
const POLL_MS = 1_000;
const MAX_ERROR_PAUSE_MS = 30_000;
/** Rows a runner takes in per claim. */
const CLAIM_BATCH = 128;
/** Rows (deliveries) or questions (policy calls) a runner holds in memory at most. */
const RUNNER_CAPACITY = 1_024;
/** Rows waiting in memory for each runner (see routing/handoff.ts). */
const HANDOFF_ROWS = 1_024;
/**
 * Policy calls in flight at once for one user: the policy service being slow for one user
 * delays only that user's events (128 answers of 50 ms each are 2,560 events a second).
 */
const POLICY_SLOTS_PER_USER = 128;
/** A runner's claim that found nothing is not repeated sooner (routing/claim-pacer.ts). */
const QUIET_CLAIM_MS = 100;
/** A runner busy with new work still claims this often, for retries and other instances' rows. */
const BUSY_CLAIM_MS = POLL_MS;
/** Other instances' subscription writes are polled for this often, or this seldom while NOTIFY works. */
const SUBSCRIPTION_REFRESH_MS = 500;
const SUBSCRIPTION_REFRESH_LISTENING_MS = 5_000;
/**
 * How long an exit past the shutdown grace waits for the database to take the leases back: the
 * grace is what a supervisor (docker stop, systemd) is told, and it stops waiting soon after.
 */
const RELEASE_AT_EXIT_MS = 1_000;
/** Ten seconds of clock skew between instances is tolerated. */
const SUBSCRIPTION_REFRESH_WINDOW_US = 10_000_000;

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

/**
 * The parts are built in dependency order, each from what it uses, and only then started; no
 * callback refers to a part built after it. Passing a part itself (not a closure over it) lets
 * the compiler reject an order in which it would be used before it exists.
 */
async function serve(config: Config): Promise<number> {
  const log = createLogger(config.logLevel);
  const tracing = await tracingFromEnvironment(log);
  if (tracing === null) return 1;
  const database = openServerDatabase(config, log, storageWatch(log));
  if (database === undefined) return 1;
  const clock = systemClock();
  const metrics = createMetrics({
    queue: {
      reader: queueReader(database.db),
      clock,
      onError: (error) => log.warn({ err: error }, 'metrics: cannot read the queue from the database'),
    },
    databasePing: () => ping(database.db),
  });
  const matcher = new LiveMatcher({
    onUnusable: (uuid, error) =>
      log.warn({ subscription: uuid, error: String(error) }, 'subscription left out of matching: its stored expression no longer compiles'),
    onEvaluationError: evaluationErrorReporter({
      count: (subscriptions) => metrics.matchEvaluationFailed(subscriptions),
      log: (uuid, error) =>
        log.warn(
          { subscription: uuid, error: String(error) },
          'subscription expression failed while matching an event: taken as no match (logged once per subscription)',
        ),
    }),
  });
  const prepared = await prepareDatabase(database, matcher);
  if (prepared === undefined) return 1;
  if (config.secretKey !== null) await sealPlainSecrets(database, config.secretKey, log);

  const policyMode = config.policyUrl ? 'policy-service' : 'allow-all';
  const origin = config.origin ?? hostname();
  const targetGuard = addressGuard({ allow: config.targetAllow, deny: config.targetDeny });
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const leaseUs = config.leaseMs * 1000;
  const outbound = startOutboundThread(
    {
      target: {
        timeoutMs: config.targetTimeoutMs,
        connectionsPerOrigin: config.targetConcurrency,
        rules: { allow: config.targetAllow, deny: config.targetDeny },
        ...(config.targetValidation === 'handshake' ? { requestOrigin: origin } : {}),
      },
      ...(config.policyUrl ? { policy: { baseUrl: config.policyUrl, timeoutMs: config.targetTimeoutMs } } : {}),
    },
    (error) => {
      log.fatal(
        { err: error },
        'exiting: deliveries and policy calls cannot go on; rows in flight return to the queue when their leases expire',
      );
      process.exit(1);
    },
  );
  const notices = operationalEvents(matcher);
  const queue = matchQueue(database, notices);
  const settler = new Settler(
    queue,
    holder,
    leaseUs,
    clock,
    unlessStorageFull((error) => log.warn({ err: error }, 'the database is not answering: outcomes are kept and recorded once it answers')),
    (error) => log.debug({ err: error }, 'the leases of rows whose outcomes are not recorded yet could not be extended; trying again'),
  );
  // A handed row must have half its lease left: time enough for a policy call or a delivery.
  const toPolicy = new Handoff(HANDOFF_ROWS, leaseUs / 2);
  const toDelivery = new Handoff(HANDOFF_ROWS, leaseUs / 2);
  const runner = {
    queue,
    settler,
    clock,
    holder,
    leaseUs,
    capacity: RUNNER_CAPACITY,
    batchSize: CLAIM_BATCH,
    schedule: { delaysMs: config.retryDelaysMs, random: Math.random },
    metrics,
    pollMs: POLL_MS,
    maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
  };
  // Pull readers waiting for their subscriptions' next events (one registry for this instance).
  const waiters = new PullWaiters();
  const secrets = { secretKey: config.secretKey, secretOverlapUs: config.secretOverlapMs * 1000, clock };
  const deliveries = deliveryRunner({
    ...runner,
    destination: destinationByKind({
      push: pushDestination({ target: outbound.target, ...secrets }),
      broker: brokerDestination({ broker: outbound.broker, ...secrets }),
      pull: pullDestination(),
    }),
    targetTimeoutMs: config.targetTimeoutMs,
    connectionsPerOrigin: config.targetConcurrency,
    inbox: toDelivery,
    pacer: new ClaimPacer(QUIET_CLAIM_MS, BUSY_CLAIM_MS),
    onSubscriptionChange: (change) => matcher.apply(change),
    onReadable: (subscription) => waiters.wake(subscription),
    onError: unlessStorageFull((error) => log.error({ err: error }, 'delivery runner: a step failed; retrying')),
    tracing,
  });
  const policy = policyRunner({
    ...runner,
    policy: outbound.policy ?? allowAll,
    timeoutMs: config.targetTimeoutMs,
    slotsPerUser: POLICY_SLOTS_PER_USER,
    inbox: toPolicy,
    next: toDelivery,
    pacer: new ClaimPacer(QUIET_CLAIM_MS, BUSY_CLAIM_MS),
    onAllowed: deliveries.wake,
    onError: unlessStorageFull((error) => log.error({ err: error }, 'policy runner: a step failed; retrying')),
    tracing,
  });
  metrics.trackDownOrigins(() => deliveries.downOrigins().length);
  metrics.trackStorageFull(() => database.storage.full);
  metrics.trackOutcomesHeld(() => settler.heldRows);
  metrics.trackPullWaiters(() => waiters.size);
  // The runners back off while their writes are refused: space freed, the outcomes held are
  // written at once, and the runners go on (claiming once those are written).
  database.storage.onRecovered(() => {
    settler.retryNow();
    policy.wake();
    deliveries.wake();
  });
  // Every readable row is announced on SQLite; on PostgreSQL while the listener hears other instances.
  const pullReads = sharedReads(
    pullReader({ database, clock, databaseTimeoutMs: config.databaseTimeoutMs, metrics }),
    waiters,
    () => sync?.listening ?? true,
  );
  const subscriptionChanged = followSubscriptionWrites(matcher, deliveries, pullReads);
  // Instances sharing the database hear of each other's writes; their own creates they apply at once.
  const expectedNotifications = database.capabilities.sharedByInstances ? new ExpectedNotifications() : undefined;
  const sync = expectedNotifications
    ? startSubscriptionSync({
        expected: expectedNotifications,
        database,
        url: config.databaseUrl,
        applicationName: `${PROGRAM} listener ${process.pid}`,
        matcher,
        apply: subscriptionChanged,
        clock,
        pollMs: SUBSCRIPTION_REFRESH_MS,
        listeningPollMs: SUBSCRIPTION_REFRESH_LISTENING_MS,
        skewUs: SUBSCRIPTION_REFRESH_WINDOW_US,
        maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
        log,
        // Other instances' readable rows, heard on the same connection; missed ones while it was down.
        onReadable: (subscription) => waiters.wake(subscription),
        onListening: () => waiters.wakeAll(),
      })
    : undefined;
  // One server per SQLite file, but the CLI and an import write to it too.
  const otherProcesses =
    prepared.loadedFrom === undefined
      ? undefined
      : followOtherProcessCommits({
          db: database.db,
          since: prepared.loadedFrom,
          matcher,
          apply: subscriptionChanged,
          metrics,
          log,
          pollMs: POLL_MS,
          maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
          onError: unlessStorageFull((error) =>
            log.error({ err: error }, "following other processes' commits to the database failed; retrying"),
          ),
        });
  const fallbackPoll =
    sync === undefined
      ? undefined
      : startFallbackPoll({
          db: database.db,
          waiters,
          listening: () => sync.listening,
          onError: (error) => log.warn({ err: error }, 'pull readers: cannot ask for readable events'),
        });
  const trustedProxies = peerList(config.trustedProxies);
  const identity = { header: config.userHeader, defaultUser: config.defaultUser, trustedProxies };
  const app = await buildApp(
    {
      maxBodyBytes: config.maxBodyBytes,
      logger: log,
      logRequests: config.logRequests,
      version: packageInfo().version,
      databaseTimeoutMs: config.databaseTimeoutMs,
      metrics,
      trustedProxies,
    },
    [
      healthRoutes({ database, policyMode }),
      metricsRoutes({ registry: metrics.registry }),
      eventmatchRoutes({
        database,
        clock,
        secretKey: config.secretKey,
        dialectMode: config.jsonpathDialect,
        userSubscriptions: config.userSubscriptions,
        targetGuard,
        ...(config.targetValidation === 'handshake'
          ? { targetConsent: targetConsent({ origin, timeoutMs: config.targetTimeoutMs, guard: targetGuard }) }
          : {}),
        identity,
        onChange: subscriptionChanged,
        ...(expectedNotifications ? { expectedNotifications } : {}),
        notices,
        onNotified: deliveries.wake,
      }),
      // A delivery queued again goes through the policy check first: that runner looks now.
      deliveriesRoutes({ database, identity, clock, onRequeued: policy.wake }),
      eventsRoutes({
        reader: pullReads,
        waiters,
        identity,
      }),
      receiveRoutes({
        eventLog: new EventLogBatch(database),
        matcher,
        clock,
        handoff: { to: toPolicy, holder, leaseUs },
        receiveToken: config.receiveToken,
        receiveAllow: config.receiveAllow === null ? null : peerList(config.receiveAllow),
        onReceived: policy.wake,
        metrics,
        tracing,
      }),
      consoleRoutes({ assets: consoleAssets() }),
    ],
  );
  const retention = startRetentionPurge({
    database,
    clock,
    retentionMs: config.retentionMs,
    metrics,
    maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
    onError: unlessStorageFull((error) => log.error({ err: error }, 'retention purge failed; retrying')),
  });
  deliveries.start();
  policy.start();
  log.info({ config: redactedConfig(config) }, 'configuration');
  if (policyMode === 'allow-all') {
    log.warn('allow-all mode: NOTIFICATIONS_POLICY_URL is not set, so every subscriber receives every event its subscriptions match');
  }
  if (!listensOnLoopbackOnly(config.address) && config.receiveToken === null && config.receiveAllow === null) {
    log.warn(
      `open /receive: listening on ${config.address}, beyond loopback, with neither NOTIFICATIONS_RECEIVE_TOKEN nor NOTIFICATIONS_RECEIVE_ALLOW set, so any peer that reaches this port can post events`,
    );
  }

  // In the reverse order of the start: no new requests, then no new work, then what is left recorded.
  const shutdown = async () => {
    await app.close();
    fallbackPoll?.stop();
    await Promise.all([policy.stop(), deliveries.stop(), sync?.stop(), otherProcesses?.stop(), retention.stop()]);
    await settler.close();
    await releaseLeasesOf(database.db, holder);
    await outbound.close();
    await database.close();
    // Every span has ended: what waits for the next export goes now.
    await tracing?.shutdown();
  };
  // Past the grace, what is still in flight is given back to the queue, to be made again; the
  // spans of what ended meanwhile are exported in the same second.
  const abandon = async () => {
    const flushed =
      tracing && within(tracing.shutdown(), RELEASE_AT_EXIT_MS, () => new Error('spans not exported in time')).catch(() => {});
    const released = await within(
      releaseLeasesOf(database.db, holder),
      RELEASE_AT_EXIT_MS,
      () => new Error(`the database did not answer within ${RELEASE_AT_EXIT_MS} ms`),
    );
    log.warn({ released }, 'released the rows still in flight: they will be delivered again');
    await flushed;
  };
  const stopped = stopOnSignals(log, config.shutdownGraceMs, shutdown, abandon);
  try {
    await app.listen({ host: config.address, port: config.port });
  } catch (error) {
    console.error(
      `${PROGRAM}: cannot listen on ${config.address}:${config.port}: ${error instanceof Error ? error.message : String(error)}`,
    );
    await database.close();
    return 1;
  }
  return stopped;
}

/**
 * Traces as the OTEL_* environment variables configure them (tracing/tracing.ts): undefined when
 * they set no endpoint, null (and said why) when they cannot be used.
 */
async function tracingFromEnvironment(log: FastifyBaseLogger): Promise<Tracing | undefined | null> {
  try {
    return await startTracing(process.env, {
      service: { name: PROGRAM, version: packageInfo().version },
      warn: (message) => log.warn({ error: message }, 'traces: the OpenTelemetry SDK reports a problem (spans may be lost)'),
    });
  } catch (error) {
    if (!(error instanceof TracingConfigError)) throw error;
    console.error(`${PROGRAM}: ${error.message}`);
    return null;
  }
}

/** Seals what is stored plain (see seal-at-rest.ts); a failure is logged and left for the next start. */
async function sealPlainSecrets(database: DatabaseHandle, keyring: Keyring, log: FastifyBaseLogger): Promise<void> {
  try {
    const count = await sealStoredSecrets(database, keyring);
    if (count > 0) log.info({ subscriptions: count }, 'sealed stored secrets with NOTIFICATIONS_SECRET_KEY');
  } catch (error) {
    log.warn({ err: error }, 'could not seal stored secrets; they stay readable, and sealing is tried again at the next start');
  }
}

/** The web console's files; or, when they cannot be read, why (the API is served without it). */
function consoleAssets(): ReturnType<typeof loadConsoleAssets> | Error {
  try {
    return loadConsoleAssets();
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/**
 * Writes refused for lack of space, said when it begins, then at most once a minute while it
 * lasts (each refused request and runner write would otherwise log a line), and when it ends.
 */
function storageWatch(log: FastifyBaseLogger): StorageWatch {
  return new StorageWatch({
    full: (error, refused) =>
      log.error(
        { err: error, refused },
        "storage full: writes are refused until one succeeds; requests that write answer 503 STORAGE_FULL, and outcomes of deliveries and policy calls are kept until then; free space on the database's volume (said again at most once a minute while it lasts)",
      ),
    recovered: (fullForMs, refused) => log.warn({ fullForMs, refused }, 'storage: a write succeeded; writes are taken again'),
  });
}

/** `report`, except for a write refused for lack of space: the storage watch says so, once a minute at most. */
function unlessStorageFull(report: (error: unknown) => void): (error: unknown) => void {
  return (error) => {
    if (!isStorageFull(error)) report(error);
  };
}

/** The database, opened as the server uses it; undefined (and said why) when it cannot be. */
function openServerDatabase(config: Config, log: FastifyBaseLogger, storage: StorageWatch): DatabaseHandle | undefined {
  try {
    return openDatabase(config.databaseUrl, {
      storage,
      create: false,
      timeoutMs: config.databaseTimeoutMs,
      boundStatements: true,
      applicationName: `${PROGRAM} ${process.pid}`,
      // Only the message and code: pg hangs the whole client (its settings included) on the error.
      onConnectionError: (error) =>
        log.warn(
          { error: error.message, code: (error as { code?: unknown }).code },
          'a database connection failed; it is replaced when next needed',
        ),
      onThreadFailure: (error) => {
        log.fatal({ err: error }, 'exiting: the SQLite thread failed; rows in flight return to the queue when their leases expire');
        process.exit(1);
      },
    });
  } catch (error) {
    if (error instanceof DatabaseMissing) {
      console.error(`${PROGRAM}: the database schema is out of date (${error.message}): run \`svc-notifications-cmd dbsync\` to create it`);
      return undefined;
    }
    console.error(`${PROGRAM}: cannot open the database: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

/**
 * Checks that the schema is current, takes back this instance's earlier leases where it is the
 * only one, and loads the live subscriptions into the matcher. Undefined (said why, database
 * closed) when the database cannot be used. On a SQLite file, which other processes may write
 * to, what it held just before the load: their commits are followed from there.
 */
async function prepareDatabase(
  database: DatabaseHandle,
  matcher: LiveMatcher,
): Promise<{ loadedFrom: SubscriptionsState | undefined } | undefined> {
  try {
    // Nothing but this process can reach an in-memory database, so no dbsync could prepare it.
    if (database.inMemory) await syncSchema(database);
    const status = await schemaStatus(database);
    if (status.pending.length > 0) {
      console.error(
        `${PROGRAM}: the database schema is out of date (${database.description} lacks ${status.pending.join(', ')}): run \`svc-notifications-cmd dbsync\``,
      );
      await database.close();
      return undefined;
    }
    // One database serves one SQLite instance: any lease in it belonged to this instance's previous life.
    if (!database.capabilities.sharedByInstances) await releaseAllLeases(database.db);
    // Instances sharing PostgreSQL hear of each other's writes otherwise (subscription-sync.ts).
    const loadedFrom = database.capabilities.sharedByInstances || database.inMemory ? undefined : await subscriptionsState(database.db);
    for await (const page of liveSubscriptionPages(database.db)) matcher.load(page);
    return { loadedFrom };
  } catch (error) {
    console.error(`${PROGRAM}: cannot use the database ${database.description}: ${error instanceof Error ? error.message : String(error)}`);
    await database.close();
    return undefined;
  }
}

/** Every subscription write, from this instance or another: the copies kept in memory follow. */
function followSubscriptionWrites(
  matcher: LiveMatcher,
  deliveries: DeliveryRunner,
  pullReads: SharedReads,
): (change: SubscriptionChange) => void {
  return (change) => {
    matcher.apply(change);
    deliveries.subscriptionChanged(change);
    pullReads.subscriptionChanged(change);
  };
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
