/**
 * The Prometheus registry of one service instance: its counters and histograms, the queue
 * gauges, whether the database answers, and prom-client's process metrics. One registry per
 * instance (never prom-client's global one), so several apps can live in one process, as they
 * do in the tests.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type DatabasePing, registerDatabaseUp } from './database-up.js';
import type { DeliveryOutcome, Metrics, OtherProcessCommitsOutcome, PolicyOutcome, PullOperation } from './metrics.js';
import { type QueueGaugeOptions, registerQueueGauges } from './queue-gauges.js';

export interface ServiceMetrics extends Metrics {
  readonly registry: Registry;
  /** Reports, at each scrape, how many target origins are down (tried once a second) in this instance. */
  trackDownOrigins(count: () => number): void;
  /** Reports, at each scrape, how many pull reads wait for their next event in this instance. */
  trackPullWaiters(count: () => number): void;
  /** Reports, at each scrape, 1 while the database refuses writes for lack of space, else 0. */
  trackStorageFull(full: () => boolean): void;
  /** Reports, at each scrape, how many rows' outcomes this instance holds until the database takes them. */
  trackOutcomesHeld(rows: () => number): void;
}

export interface MetricsOptions {
  /** Without it there are no queue gauges (a registry for a test of the counters alone). */
  queue?: QueueGaugeOptions;
  /** Without it there is no `notifications_database_up`. */
  databasePing?: DatabasePing;
}

const POLICY_LABELS: Record<PolicyOutcome, string> = { allow: 'allowed', deny: 'denied', retry: 'retry' };
const DELIVERY_OUTCOMES: readonly DeliveryOutcome[] = ['delivered', 'retry', 'failed', 'cancelled'];
const OTHER_PROCESS_COMMITS_OUTCOMES: readonly OtherProcessCommitsOutcome[] = ['unchanged', 'added', 'reloaded'];
const PULL_OPERATIONS: readonly PullOperation[] = ['lookup', 'read', 'acknowledge'];
/** One HTTP exchange: a millisecond up to the longest sensible NOTIFICATIONS_TARGET_TIMEOUT. */
const ATTEMPT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Creation to delivery: milliseconds when all goes well, up to a day through the retry schedule. */
/** One request to the API: the same range as an attempt, a database wait being what it mostly spends. */
const REQUEST_BUCKETS = ATTEMPT_BUCKETS;
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400];

export function createMetrics(options: MetricsOptions = {}): ServiceMetrics {
  const registry = new Registry();
  const registers = [registry];
  const received = new Counter({
    name: 'notifications_events_received_total',
    help: 'Events accepted by /receive: logged (new), or duplicate (same source and id as one already logged; not routed again).',
    labelNames: ['outcome'],
    registers,
  });
  const matches = new Counter({
    name: 'notifications_matches_total',
    help: 'Match rows created: one per subscription matched by a newly logged event.',
    registers,
  });
  const policyAnswers = new Counter({
    name: 'notifications_policy_answers_total',
    help: 'Policy answers recorded, one per (event, user): allowed (2xx), denied (4xx), retry (5xx, time-out, no connection; asked again later).',
    labelNames: ['outcome'],
    registers,
  });
  const deliveries = new Counter({
    name: 'notifications_deliveries_total',
    help: 'Delivery rows settled by the delivery stage: delivered, retry (tried again later), failed (permanently, or the schedule ran out), cancelled (subscription deleted or disabled before the attempt).',
    labelNames: ['outcome'],
    registers,
  });
  const attemptDuration = new Histogram({
    name: 'notifications_delivery_duration_seconds',
    help: 'Duration of each delivery attempt: the HTTP exchange with the target, or the publish to a broker until its confirmation.',
    buckets: ATTEMPT_BUCKETS,
    registers,
  });
  const latency = new Histogram({
    name: 'notifications_delivery_latency_seconds',
    help: 'From the creation of a match (the event was received) to its delivery, retries included.',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const purgedEvents = new Counter({
    name: 'notifications_events_purged_total',
    help: "Events deleted by this instance's retention purge (NOTIFICATIONS_RETENTION): received longer ago than the retention, every match finished.",
    registers,
  });
  const purgedMatches = new Counter({
    name: 'notifications_matches_purged_total',
    help: 'Match rows deleted with the events of notifications_events_purged_total (their attempts went with them).',
    registers,
  });
  const evaluationErrors = new Counter({
    name: 'notifications_match_evaluation_errors_total',
    help: 'Subscriptions whose expression threw while matching an event, one per subscription and event: taken as no match (the log names each subscription once).',
    registers,
  });
  const requests = new Counter({
    name: 'notifications_http_requests_total',
    help: 'Requests the HTTP API answered, by method, route pattern (/eventmatch/:uuid; (unmatched) for a path no route serves) and status.',
    labelNames: ['method', 'route', 'status'],
    registers,
  });
  const requestDuration = new Histogram({
    name: 'notifications_http_request_duration_seconds',
    help: 'From the arrival of a request to the end of its answer, by method and route pattern.',
    labelNames: ['method', 'route'],
    buckets: REQUEST_BUCKETS,
    registers,
  });
  const otherProcessCommits = new Counter({
    name: 'notifications_other_process_commits_total',
    help: 'SQLite: looks (once a second) that found the database file committed to by other processes (the CLI, an import) since the last, by what the subscriptions needed: unchanged (nothing), added (only new ones: read and matched from then on), reloaded (every one read again).',
    labelNames: ['outcome'],
    registers,
  });
  const pullOperations = new Counter({
    name: 'notifications_pull_database_operations_total',
    help: 'Database calls of pull readers (long-polls and event streams), by operation: lookup (whose subscription it is), read (its events after a cursor), acknowledge (delivered up to a cursor). Readers of a subscription woken together share one read and one acknowledgement; waiting costs none.',
    labelNames: ['operation'],
    registers,
  });
  // Every known series starts at 0, so a rate over it exists before its first event.
  for (const outcome of ['logged', 'duplicate']) received.inc({ outcome }, 0);
  for (const outcome of Object.values(POLICY_LABELS)) policyAnswers.inc({ outcome }, 0);
  for (const outcome of DELIVERY_OUTCOMES) deliveries.inc({ outcome }, 0);
  for (const outcome of OTHER_PROCESS_COMMITS_OUTCOMES) otherProcessCommits.inc({ outcome }, 0);
  for (const operation of PULL_OPERATIONS) pullOperations.inc({ operation }, 0);

  /** A gauge whose value is read from the instance at each scrape. */
  const readAtScrape = (name: string, help: string, read: () => number) =>
    void new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read());
      },
    });

  if (options.queue) registerQueueGauges(registry, options.queue);
  if (options.databasePing) registerDatabaseUp(registry, options.databasePing);
  collectDefaultMetrics({ register: registry });

  return {
    registry,
    eventReceived: (duplicate) => received.inc({ outcome: duplicate ? 'duplicate' : 'logged' }),
    matched: (count) => matches.inc(count),
    policyAnswered: (kind) => policyAnswers.inc({ outcome: POLICY_LABELS[kind] }),
    deliverySettled: (outcome, attemptSeconds, latencySeconds) => {
      deliveries.inc({ outcome });
      if (attemptSeconds !== undefined) attemptDuration.observe(attemptSeconds);
      // The match may have been created by another instance whose clock runs a little ahead.
      if (latencySeconds !== undefined) latency.observe(Math.max(0, latencySeconds));
    },
    eventsPurged: (events, matches) => {
      purgedEvents.inc(events);
      purgedMatches.inc(matches);
    },
    matchEvaluationFailed: (subscriptions) => evaluationErrors.inc(subscriptions),
    requestAnswered: (method, route, status, seconds) => {
      requests.inc({ method, route, status });
      requestDuration.observe({ method, route }, seconds);
    },
    otherProcessCommits: (outcome) => otherProcessCommits.inc({ outcome }),
    pullDatabaseOperation: (operation) => pullOperations.inc({ operation }),
    trackDownOrigins: (count) =>
      readAtScrape(
        'notifications_target_origins_down',
        'Target origins (scheme, host, port) that gave no answer three times in a row: tried once a second until one answers, their other deliveries waiting.',
        count,
      ),
    trackPullWaiters: (count) =>
      readAtScrape(
        'notifications_pull_waiters',
        'Pull reads waiting in this instance for their next event (long-polls with wait, and event streams); they cost no database work while they wait.',
        count,
      ),
    trackStorageFull: (full) =>
      readAtScrape(
        'notifications_storage_full',
        'Whether the database refuses writes for lack of space (1) since a write was refused, until one succeeds again; else 0.',
        () => (full() ? 1 : 0),
      ),
    trackOutcomesHeld: (rows) =>
      readAtScrape(
        'notifications_outcomes_held',
        'Rows whose outcome (a delivery or a policy answer) this instance holds in memory because the database refused or did not answer its write: written first once it takes writes, and meanwhile not claimed again.',
        rows,
      ),
  };
}
