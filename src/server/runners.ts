/**
 * The policy and delivery runners, with what they share: the outbound thread that makes their
 * calls, the queue and the settler of its rows, and the handoffs in memory from /receive to
 * the policy runner and from it to the delivery runner.
 */
import { matchQueue } from '../db/stores/match-queue.js';
import type { NoticeEvents } from '../db/stores/subscription-notices.js';
import { brokerDestination } from '../delivery/broker-destination.js';
import { destinationByKind } from '../delivery/destination-by-kind.js';
import { type OutboundThread, startOutboundThread } from '../delivery/outbound-thread.js';
import { pullDestination } from '../delivery/pull-destination.js';
import { pushDestination } from '../delivery/push-destination.js';
import { type DeliveryRunner, deliveryRunner } from '../delivery/runner.js';
import { operationalEvents } from '../receive/operational-events.js';
import type { EgressSettings } from '../net/egress-proxy.js';
import { allowAll } from '../policy/policy-client.js';
import { POLICY_SLOTS_PER_USER, type PolicyRunner, policyRunner } from '../policy/runner.js';
import type { PullWaiters } from '../pull/waiters.js';
import { BUSY_CLAIM_MS, ClaimPacer, QUIET_CLAIM_MS } from '../runners/claim-pacer.js';
import { Handoff, HANDOFF_LEASE_LEFT, HANDOFF_ROWS } from '../runners/handoff.js';
import { RUNNER_IDLE_POLL_MS, RUNNER_POLL_MS } from '../runners/runner-loop.js';
import { CLAIM_BATCH, RUNNER_CAPACITY } from '../runners/runner-options.js';
import { Settler } from '../runners/settler.js';
import { MAX_ERROR_PAUSE_MS } from '../runners/worker-loop.js';
import type { Tracing } from '../tracing/tracing.js';
import type { ServerBase } from './base.js';
import { unlessStorageFull } from './database.js';
import { originOf } from './program.js';

export interface RunnersOptions extends ServerBase {
  /** The egress proxy of deliveries to targets and of policy calls. */
  egress: EgressSettings;
  /** Pull readers waiting for their subscriptions' next events (counted in the metrics). */
  waiters: PullWaiters;
  /** Rows of `subscription` were made readable by this instance (committed). */
  onReadable: (subscription: string) => void;
  tracing: Tracing | undefined;
  /** Names this instance's leases. */
  holder: string;
}

export interface Runners {
  outbound: OutboundThread;
  settler: Settler;
  /** Where /receive hands the rows it writes leased. */
  toPolicy: Handoff;
  policy: PolicyRunner;
  deliveries: DeliveryRunner;
  notices: NoticeEvents;
}

/** Built, not started; the outbound thread starts at once (a failure of it ends the process). */
export function buildRunners(options: RunnersOptions): Runners {
  const { config, log, database, clock, metrics, matcher, waiters, tracing, holder, egress } = options;
  const leaseUs = config.leaseMs * 1000;
  const outbound = startOutboundThread(
    {
      target: {
        timeoutMs: config.targetTimeoutMs,
        connectionsPerOrigin: config.targetConcurrency,
        rules: { allow: config.targetAllow, deny: config.targetDeny },
        ...(config.targetValidation === 'handshake' ? { requestOrigin: originOf(config) } : {}),
      },
      ...(config.policyUrl ? { policy: { baseUrl: config.policyUrl, timeoutMs: config.targetTimeoutMs } } : {}),
      egress,
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
  const toPolicy = new Handoff(HANDOFF_ROWS, leaseUs * HANDOFF_LEASE_LEFT);
  const toDelivery = new Handoff(HANDOFF_ROWS, leaseUs * HANDOFF_LEASE_LEFT);
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
    pollMs: RUNNER_POLL_MS,
    idlePollMs: RUNNER_IDLE_POLL_MS,
    maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
  };
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
    onReadable: options.onReadable,
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
  return { outbound, settler, toPolicy, policy, deliveries, notices };
}
