/**
 * The policy and delivery runners over a real database, driven a round at a time (no loop):
 * `round` takes in what is due and waits until everything it started is answered and recorded.
 */
import type { DatabaseHandle } from '../../src/db/connect.js';
import { type MatchQueue, matchQueue } from '../../src/db/stores/match-queue.js';
import { brokerDestination } from '../../src/delivery/broker-destination.js';
import { destinationByKind } from '../../src/delivery/destination-by-kind.js';
import type { BrokerClient } from '../../src/delivery/broker-publisher.js';
import { type DeliveryRunner, type DeliveryRunnerOptions, deliveryRunner } from '../../src/delivery/runner.js';
import { pullDestination } from '../../src/delivery/pull-destination.js';
import { type PushDestinationOptions, pushDestination } from '../../src/delivery/push-destination.js';
import { type PolicyRunner, type PolicyRunnerOptions, policyRunner } from '../../src/policy/runner.js';
import { Settler } from '../../src/runners/settler.js';
import { type Clock, systemClock } from '../../src/time/clock.js';

export const TEST_LEASE_US = 30_000_000;

interface Common {
  handle: DatabaseHandle;
  clock?: Clock;
  holder?: string;
  /** How long its claims' leases run (µs): TEST_LEASE_US without. */
  leaseUs?: number;
  /** The runner's settler (over `queue`, with `holder`, `leaseUs` and `clock`); one of its own without. */
  settler?: Settler;
  /** What the runner claims from and reads (and its own settler writes to): matchQueue(handle) without. */
  queue?: MatchQueue;
}

function common({ handle, clock = systemClock(), holder = 'me', leaseUs = TEST_LEASE_US, settler, queue = matchQueue(handle) }: Common) {
  return {
    queue,
    settler: settler ?? new Settler(queue, holder, leaseUs, clock, () => undefined),
    clock,
    holder,
    leaseUs,
    capacity: 1_024,
    batchSize: 64,
    schedule: { delaysMs: [1_000], random: () => 0.5 },
    pollMs: 60_000,
    maxErrorPauseMs: 1_000,
    onError: (error: unknown) => {
      throw error;
    },
  };
}

export function testDeliveryRunner(
  base: Common,
  options: Pick<PushDestinationOptions, 'target'> &
    Partial<Omit<PushDestinationOptions, 'clock'>> &
    Partial<Omit<DeliveryRunnerOptions, 'queue' | 'settler' | 'clock' | 'holder' | 'destination'>> & {
      /** Broker target URLs go to it (as the server wires it); without it, every row is pushed over HTTP. */
      broker?: BrokerClient;
    },
): DeliveryRunner {
  const { target, broker, secretKey = null, secretOverlapUs = 24 * 3600 * 1e6, ...rest } = options;
  const runnerOptions = common(base);
  const secrets = { secretKey, secretOverlapUs, clock: runnerOptions.clock };
  const push = pushDestination({ target, ...secrets });
  return deliveryRunner({
    ...runnerOptions,
    destination:
      broker === undefined ? push : destinationByKind({ push, broker: brokerDestination({ broker, ...secrets }), pull: pullDestination() }),
    targetTimeoutMs: 2_000,
    connectionsPerOrigin: 4,
    onSubscriptionChange: () => undefined,
    ...rest,
  });
}

export function testPolicyRunner(
  base: Common,
  options: Pick<PolicyRunnerOptions, 'policy'> & Partial<Omit<PolicyRunnerOptions, 'queue' | 'settler' | 'clock' | 'holder'>>,
): PolicyRunner {
  return policyRunner({ ...common(base), timeoutMs: 2_000, slotsPerUser: 16, onAllowed: () => undefined, ...options });
}

/** One round: what it took in, once all it started is answered and recorded. */
export async function round(runner: { intake(): Promise<number>; idle(): Promise<void> }): Promise<number> {
  const taken = await runner.intake();
  await runner.idle();
  return taken;
}
