/**
 * The delivery runner: takes "deliver" rows (handed over by the policy runner, or claimed from
 * the queue), hands each to its subscription's destination (destination.ts; push over HTTP to a
 * target) as soon as the destination's lane has a free slot, and settles each as its outcome
 * comes (runners/after-attempt.ts says what the outcome means). The runner core
 * (runners/runner-core.ts) runs all of that with this runner's strategy, which is the rest. A
 * lane is what the destination names: a target's origin. Nothing waits for anything but its own
 * origin:
 * - each origin (scheme, host, port) has NOTIFICATIONS_TARGET_CONCURRENCY connections and a lane
 *   (lanes.ts) whose slots are the origin's window (origin-health.ts): the connections, and
 *   for a target that answers quickly up to eight times as many, waiting in the sender's thread
 *   for the next free connection. A slow or hanging target fills only its own slots, and
 *   claims leave out the work of an origin that has as much again waiting, and take no more
 *   than the lanes' room (a row claimed only to be given back is two writes for nothing);
 * - an origin that keeps giving no answer is down: probed once a second, its other rows
 *   waiting, untried;
 * - a row waits in memory only while its lease still has room for a whole exchange; then it is
 *   given back to the queue untried, keeping its place;
 * - a handed row of an origin whose lane is full is left in the handoff while the origin keeps
 *   up (answers quickly): it has room soon, and waiting there holds back the policy stage instead
 *   of costing the row a write back to the queue and a claim. An origin that is slow or silent
 *   gets no such wait: its rows go back to the queue, so that they fill only its own lane;
 * - a subscription with a `rate_limit`, or a target that allowed only so many deliveries a minute
 *   in its consent, has its rows started no faster than the lower of the two, with at most a
 *   second's worth waiting here (rate-pacing.ts).
 * Rows of subscriptions deleted or disabled meanwhile are cancelled instead of sent. The
 * subscriptions' rows are read once and kept (subscription-cache.ts), fresh by the same feed of
 * subscription writes that keeps the rows waiting in the lanes fresh.
 */
import type { EventRow } from '../db/stores/events.js';
import type { SubscriptionChange } from '../db/stores/subscriptions.js';
import type { MatchesTable, SubscriptionRow } from '../db/tables.js';
import type { DeliveryOutcome } from '../metrics/metrics.js';
import { OPERATIONAL_SOURCE } from '../operational-source.js';
import type { HandedMatch } from '../runners/handoff.js';
import { type AttemptStrategy, RunnerCore, type Work } from '../runners/runner-core.js';
import type { Runner } from '../runners/runner-loop.js';
import type { RunnerOptions } from '../runners/runner-options.js';
import type { SpanAttributes, Tracing } from '../tracing/tracing.js';
import type { Attempted, Destination } from './destination.js';
import { OriginHealth } from './origin-health.js';
import { RatePacing } from './rate-pacing.js';
import { lowestLimit } from './rate-limiter.js';
import { SubscriptionCache } from './subscription-cache.js';

export interface DeliveryRunnerOptions extends RunnerOptions {
  /** Where each row goes (push-destination.ts for HTTP targets). */
  destination: Destination;
  /** NOTIFICATIONS_TARGET_TIMEOUT: one exchange takes at most this long. */
  targetTimeoutMs: number;
  /** NOTIFICATIONS_TARGET_CONCURRENCY: the sender's connections per origin. */
  connectionsPerOrigin: number;
  /** A subscription was disabled by a failure: whoever keeps copies must hear of it. */
  onSubscriptionChange: (change: SubscriptionChange) => void;
  /** Rows of a pull subscription became readable (committed): its waiting readers must hear of it. */
  onReadable?: (subscription: string) => void;
  /** When given, each attempt has a span, a child of its event's receive span. */
  tracing?: Tracing;
}

/** Its rounds also take a probe for each down origin with nothing to probe with. */
export interface DeliveryRunner extends Runner {
  /** A subscription was written: rows of it waiting here with what it was before are given back. */
  subscriptionChanged(change: SubscriptionChange): void;
  /** Origins that are down now (for the metrics). */
  downOrigins(): string[];
}

/** One row to deliver; its lane is what its destination names (a target's origin). */
interface Delivery extends Work {
  rows: readonly [MatchesTable];
  event: EventRow;
  subscription: SubscriptionRow;
  /** Deliveries a second at most (rate-pacing.ts); null: no limit. */
  rate: number | null;
}

/** About 2 KB each: at most 20 MB, enough for every subscription a busy facility delivers to in a day. */
const SUBSCRIPTIONS_KEPT = 10_000;

export function deliveryRunner(options: DeliveryRunnerOptions): DeliveryRunner {
  const { queue, clock } = options;
  const health = new OriginHealth(options.connectionsPerOrigin);
  /** The subscriptions seen for each origin: what a claim leaves out while the origin is full or down. */
  const subscriptionsOf = new Map<string, Set<string>>();
  /** The other way round: the origin each of those subscriptions was last seen delivering to. */
  const originOf = new Map<string, string>();
  const subscriptions = new SubscriptionCache(queue.subscriptions, SUBSCRIPTIONS_KEPT);
  const pacing = new RatePacing(clock, () => core.dispatch());
  /** What the lane of an origin not seen yet takes: twice its connections. */
  const newLaneRoom = 2 * options.connectionsPerOrigin;

  const deliveries: AttemptStrategy<Delivery, Attempted> = {
    slots: (origin) => health.window(origin),
    allowance: (origin, free, now) => health.allowance(origin, free, now),
    pacing,
    downLanes: () => health.downOrigins(),
    claimFilter: (leftOut) => ({
      excludeSubscriptions: [...[...leftOut].flatMap((origin) => [...(subscriptionsOf.get(origin) ?? [])]), ...pacing.saturated()],
    }),
    claimRoom,
    // Not for a down origin: it is only probed.
    laneSlack: (origin) => (health.isDown(origin) ? 0 : newLaneRoom),
    stays: handedRowStays,
    probes: claimProbes,
    workOf,
    // The subscriptions, read (when not kept) while the events are.
    prepare: (rows) => subscriptions.get(rows.map((row) => row.subscription_uuid)),
    // Origins with nothing here and nothing wrong start afresh when next seen.
    tidy: () => {
      for (const origin of health.known()) if (!core.lanes.has(origin) && !health.isDown(origin)) forget(origin);
    },
    openSpan: ({ lane, rows: [row], event, subscription }) =>
      options.tracing?.deliveryAttempt(event.traceparent, {
        'notifications.match.uuid': row.uuid,
        'notifications.event.uuid': row.event_uuid,
        'notifications.subscription.uuid': subscription.uuid,
        'notifications.owner': row.owner,
        'notifications.destination': lane,
        'notifications.attempt': row.attempts + 1,
      }),
    attempt: ({ rows: [row], event, subscription }, traceparent) =>
      options.destination.deliver({ row, event, subscription, endWithinMs: core.leaseRoom.leftForExchangeMs(row, clock()), traceparent }),
    // `later` and `permanent` are errors, with what the attempt record keeps.
    endSpan: (span, { outcome }) => {
      const attributes: SpanAttributes = { 'notifications.outcome': outcome.kind };
      if ('status' in outcome && outcome.status !== null) attributes['http.response.status_code'] = outcome.status;
      const failed = outcome.kind === 'later' || outcome.kind === 'permanent';
      span.end(attributes, failed ? (outcome.error ?? outcome.reason) : undefined);
    },
    // Any answer means the destination is up (what it said is the row's business); none at all,
    // when one could come, counts towards its being down. A broker's confirmation is an answer
    // without an HTTP status.
    ended: ({ work: { lane, subscription, event }, result: { outcome, durationMs }, at }) => {
      if (outcome.kind === 'accepted' || ('status' in outcome && outcome.status !== null)) health.answered(lane, durationMs, at);
      else if (outcome.kind === 'later') health.noAnswer(lane, at);
      return { subscription: { uuid: subscription.uuid, at, tell: event.source !== OPERATIONAL_SOURCE } };
    },
    settled: (
      {
        work: {
          rows: [row],
          subscription,
        },
        result: { durationMs },
        after,
        at,
      },
      settled,
    ) => {
      if (settled === undefined) return;
      if (after.result === 'readable') {
        if (settled.rows.has(row.uuid)) options.onReadable?.(subscription.uuid);
      } else if (settled.rows.has(row.uuid)) {
        const latency = after.result === 'delivered' ? (at - row.created) / 1e6 : undefined;
        options.metrics?.deliverySettled(after.result as DeliveryOutcome, durationMs / 1000, latency);
      }
      for (const disabled of settled.disabled) {
        subscriptionChanged({ kind: 'upsert', row: disabled });
        options.onSubscriptionChange({ kind: 'upsert', row: disabled });
      }
    },
  };
  const core = new RunnerCore('deliver', options, options.targetTimeoutMs, deliveries);

  /**
   * A handed row whose origin keeps up but has no room for it (counting the rows taken before it
   * in this round) waits in the handoff.
   */
  function handedRowStays(now: number): (item: HandedMatch) => boolean {
    const takenFor = new Map<string, number>();
    return ({ row }) => {
      const origin = originOf.get(row.subscription_uuid);
      if (origin === undefined || !health.keepingUp(origin, now)) return false;
      const taken = takenFor.get(origin) ?? 0;
      if (taken >= core.lanes.room(origin)) return true;
      takenFor.set(origin, taken + 1);
      return false;
    };
  }

  /**
   * The room of the lanes a claim may fill: those with work here that it does not leave out, and
   * a new lane's worth for rows of origins not seen yet. With no lanes at all (nothing known of
   * what waits in the queue), the batch.
   */
  function claimRoom(leftOut: ReadonlySet<string>): number {
    let room = newLaneRoom;
    let lanes = leftOut.size;
    for (const origin of subscriptionsOf.keys()) {
      if (leftOut.has(origin) || !core.lanes.has(origin)) continue;
      room += core.lanes.room(origin);
      lanes++;
    }
    return lanes === 0 ? Infinity : room;
  }

  /** A down origin with nothing waiting gets one row of its own claimed, to probe it with (when claims may be made). */
  async function claimProbes(now: number): Promise<MatchesTable[]> {
    const rows: MatchesTable[] = [];
    if (!core.mayClaim) return rows;
    for (const origin of health.probesDue(now, (o) => core.lanes.has(o))) {
      const claimed = await core.claim(now, 1, { onlySubscriptions: [...(subscriptionsOf.get(origin) ?? [])] });
      // Nothing of it is due any more: what was known of it goes.
      if (claimed.length === 0) forget(origin);
      rows.push(...claimed);
    }
    return rows;
  }

  /** The rows taken, with their subscriptions; those of subscriptions gone or disabled are cancelled. */
  async function workOf(taken: readonly HandedMatch[]): Promise<Delivery[]> {
    if (taken.length === 0) return [];
    const subscriptionOf = await subscriptions.get(taken.map((t) => t.row.subscription_uuid));
    const work: Delivery[] = [];
    for (const { row, event } of taken) {
      const subscription = subscriptionOf.get(row.subscription_uuid);
      if (!subscription || subscription.deleted !== null || subscription.disabled !== null) {
        cancel([row]);
        continue;
      }
      const origin = options.destination.laneOf(subscription);
      let known = subscriptionsOf.get(origin);
      if (!known) subscriptionsOf.set(origin, (known = new Set()));
      known.add(subscription.uuid);
      originOf.set(subscription.uuid, origin);
      // The subscription's own limit, or what its target allowed in the handshake (per minute): the lower.
      const rate = lowestLimit(subscription.rate_limit, subscription.allowed_rate === null ? null : subscription.allowed_rate / 60);
      work.push({ lane: origin, rows: [row], event, subscription, rate });
    }
    return work;
  }

  function cancel(rows: readonly MatchesTable[]): void {
    core.cancel(rows, () => options.metrics?.deliverySettled('cancelled'));
  }

  function subscriptionChanged(change: SubscriptionChange): void {
    subscriptions.changed(change);
    const uuid = change.kind === 'delete' ? change.uuid : change.row.uuid;
    originOf.delete(uuid);
    if (!pacing.hasWaiting(uuid)) return;
    const current = change.kind === 'delete' ? undefined : change.row;
    const gone = current === undefined || current.deleted !== null || current.disabled !== null;
    const stale = core
      .takeOutWaiting((d) => d.subscription.uuid === uuid && (gone || !sameDelivery(options.destination, d.subscription, current)))
      .map((d) => d.rows[0]);
    // Deleted or disabled: its waiting rows are cancelled. Sent elsewhere or otherwise: they
    // go back, to be read again with the subscription as it is now.
    if (gone) cancel(stale);
    else core.giveBack(stale);
  }

  function forget(origin: string): void {
    health.forget(origin);
    if (core.lanes.has(origin)) return;
    for (const subscription of subscriptionsOf.get(origin) ?? []) if (originOf.get(subscription) === origin) originOf.delete(subscription);
    subscriptionsOf.delete(origin);
  }

  const runner = core.runner();
  return {
    ...runner,
    subscriptionChanged,
    downOrigins: () => health.downOrigins(),
    stop: () => {
      pacing.stop();
      return runner.stop();
    },
  };
}

/** Whether rows read with `before` would be delivered, and paced, as they would with `after`. */
function sameDelivery(destination: Destination, before: SubscriptionRow, after: SubscriptionRow): boolean {
  return destination.unchanged(before, after) && before.rate_limit === after.rate_limit && before.allowed_rate === after.allowed_rate;
}
