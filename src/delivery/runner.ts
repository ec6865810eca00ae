/**
 * The delivery runner: takes "deliver" rows (handed over by the policy runner, or claimed from
 * the queue; runner-core.ts), hands each to its subscription's destination (destination.ts; push
 * over HTTP to a target) as soon as the destination's lane has a free slot, and settles each as
 * its outcome comes (routing/after-attempt.ts says what the outcome means). A lane is what the
 * destination names: a target's origin. Nothing waits for anything but its own origin:
 * - each origin (scheme, host, port) has NOTIFICATIONS_TARGET_CONCURRENCY connections and a lane
 *   (lanes.ts) whose slots are the origin's window (origin-health.ts): the connections, and
 *   for a target that answers quickly up to eight times as many, waiting in the sender's thread
 *   for the next free connection. A slow or hanging target fills only its own slots, and
 *   claims leave out the work of an origin that has as much again waiting;
 * - an origin that keeps giving no answer is down: probed once a second, its other rows
 *   waiting, untried;
 * - a row waits in memory only while its lease still has room for a whole exchange; then it is
 *   given back to the queue untried, keeping its place.
 * - a handed row of an origin whose lane is full is left in the handoff while the origin keeps
 *   up (answers quickly): it has room soon, and waiting there holds back the policy stage instead
 *   of costing the row a write back to the queue and a claim. An origin that is slow or silent
 *   gets no such wait: its rows go back to the queue, so that they fill only its own lane.
 * - a subscription with a `rate_limit`, or a target that allowed only so many deliveries a minute
 *   in its consent, has its rows started no faster than the lower of the two (rate-limiter.ts):
 *   the others of its lane go past them, and it keeps at most a second's worth waiting here
 *   (claims leave out the rest), so that it holds back neither its origin nor the runner;
 * Rows of subscriptions deleted or disabled meanwhile are cancelled instead of sent. The
 * subscriptions' rows are read once and kept (subscription-cache.ts), fresh by the same feed of
 * subscription writes that keeps the rows waiting in the lanes fresh.
 */
import type { EventRow } from '../db/events.js';
import type { HandedMatch } from '../routing/handoff.js';
import { OPERATIONAL_SOURCE } from '../operational-source.js';
import type { SubscriptionChange } from '../db/subscriptions.js';
import type { DeliveryOutcome } from '../metrics/metrics.js';
import type { MatchesTable, SubscriptionRow } from '../db/tables.js';
import { afterAttempt, type AttemptOutcome } from '../routing/after-attempt.js';
import { Lanes } from '../routing/lanes.js';
import type { Batch } from '../routing/next-batch.js';
import { RunnerCore } from '../routing/runner-core.js';
import type { Runner } from '../routing/runner-loop.js';
import type { RunnerOptions } from '../routing/runner-options.js';
import type { SpanAttributes, TraceSpan, Tracing } from '../tracing/tracing.js';
import type { Destination } from './destination.js';
import { OriginHealth } from './origin-health.js';
import { lowestLimit, RateLimiter } from './rate-limiter.js';
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

interface Delivery {
  row: MatchesTable;
  event: EventRow;
  subscription: SubscriptionRow;
  origin: string;
}

/** About 2 KB each: at most 20 MB, enough for every subscription a busy facility delivers to in a day. */
const SUBSCRIPTIONS_KEPT = 10_000;

export function deliveryRunner(options: DeliveryRunnerOptions): DeliveryRunner {
  const { queue, clock } = options;
  const health = new OriginHealth(options.connectionsPerOrigin);
  const lanes = new Lanes<Delivery>((origin) => health.window(origin));
  /** The subscriptions seen for each origin: what a claim leaves out while the origin is full or down. */
  const subscriptionsOf = new Map<string, Set<string>>();
  /** The other way round: the origin each of those subscriptions was last seen delivering to. */
  const originOf = new Map<string, string>();
  /** Rows waiting, by subscription: only subscriptions with some are looked for when one changes. */
  const waitingOf = new Map<string, number>();
  /** The delivery rate of subscriptions with rows waiting here that have one. */
  const rateOf = new Map<string, number>();
  const limiter = new RateLimiter(clock);
  const subscriptions = new SubscriptionCache(queue.subscriptions, SUBSCRIPTIONS_KEPT);
  let rateWake: { timer: NodeJS.Timeout; at: number } | undefined;
  const core = new RunnerCore('deliver', options, options.targetTimeoutMs, intake);

  /** New rows (handed over first, then claimed, leaving out the work of origins that are full or down), and probes. */
  async function intake(): Promise<number> {
    const now = clock();
    giveBackExpiring(now);
    const room = Math.min(options.batchSize, options.capacity - lanes.size);
    const claims = {
      leftOut: () => new Set([...lanes.fullKeys(), ...health.downOrigins()]),
      claim: (limit: number, leftOut: ReadonlySet<string>) => {
        const excludeSubscriptions = [...[...leftOut].flatMap((origin) => [...(subscriptionsOf.get(origin) ?? [])]), ...saturated()];
        return core.claim(now, limit, { excludeSubscriptions });
      },
    };
    const take = async ({ handed, claimed }: Batch, alsoTaken: (rows: readonly MatchesTable[]) => void) => {
      const probes = await claimProbes(now);
      alsoTaken(probes);
      await place([
        ...handed.map(({ row, event }) => ({ row, event })),
        ...claimed.map((row) => ({ row })),
        ...probes.map((row) => ({ row })),
      ]);
    };
    // A handed row whose origin keeps up but has no room for it (counting the rows taken
    // before it in this round) waits in the handoff.
    const takenFor = new Map<string, number>();
    const stays = ({ row }: HandedMatch) => {
      const origin = originOf.get(row.subscription_uuid);
      if (origin === undefined || !health.keepingUp(origin, now)) return false;
      const taken = takenFor.get(origin) ?? 0;
      if (taken >= lanes.room(origin)) return true;
      takenFor.set(origin, taken + 1);
      return false;
    };
    return core.takeIn(now, room, claims, take, dispatch, stays);
  }

  /** A down origin with nothing waiting gets one row of its own claimed, to probe it with (when claims may be made). */
  async function claimProbes(now: number): Promise<MatchesTable[]> {
    const rows: MatchesTable[] = [];
    if (!core.mayClaim) return rows;
    for (const origin of health.probesDue(now, (o) => lanes.has(o))) {
      const claimed = await core.claim(now, 1, { onlySubscriptions: [...(subscriptionsOf.get(origin) ?? [])] });
      // Nothing of it is due any more: what was known of it goes.
      if (claimed.length === 0) forget(origin);
      rows.push(...claimed);
    }
    return rows;
  }

  async function place(taken: Array<{ row: MatchesTable; event?: EventRow }>): Promise<void> {
    if (taken.length === 0) return;
    const unread = taken.filter((t) => t.event === undefined).map((t) => t.row.event_uuid);
    const [events, subscriptionOf] = await Promise.all([
      queue.events(unread),
      subscriptions.get(taken.map((t) => t.row.subscription_uuid)),
    ]);
    const full: MatchesTable[] = [];
    for (const { row, event = events.get(row.event_uuid) } of taken) {
      // Purged since: the row went with it (cascade), and nothing is written of it, as at the
      // policy stage (a cancel would be a settlement that changes nothing).
      if (!event) continue;
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
      if (rate === null) rateOf.delete(subscription.uuid);
      else rateOf.set(subscription.uuid, rate);
      // More than an origin's lane holds, or a second's worth of its subscription's rate: the
      // queue keeps it until there is room, rather than memory, where it could crowd out the others.
      if (lanes.isFull(origin) || isSaturated(subscription.uuid)) {
        full.push(row);
        continue;
      }
      countWaiting(subscription.uuid, +1);
      lanes.add(origin, { row, event, subscription, origin });
    }
    core.giveBack(full);
  }

  function cancel(rows: readonly MatchesTable[]): void {
    core.cancel(rows, () => options.metrics?.deliverySettled('cancelled'));
  }

  /** Subscriptions with a second's worth of rows (at their rate) waiting here: claims leave them out. */
  function saturated(): string[] {
    return [...rateOf.keys()].filter(isSaturated);
  }

  function isSaturated(subscription: string): boolean {
    const rate = rateOf.get(subscription);
    return rate !== undefined && (waitingOf.get(subscription) ?? 0) >= rate;
  }

  /** Starts what may start: in every lane, or in `only` (the one whose slot just came free). */
  function dispatch(only?: string): void {
    if (core.stopping) return;
    const now = clock();
    const held = new Set<string>();
    const withinRate = ({ subscription }: Delivery) => {
      const rate = rateOf.get(subscription.uuid);
      if (rate === undefined || limiter.tryStart(subscription.uuid, rate)) return true;
      held.add(subscription.uuid);
      return false;
    };
    const started = lanes.start((origin, free) => health.allowance(origin, free, now), only, withinRate);
    if (held.size > 0) wakeForRate(Math.min(...[...held].map((uuid) => limiter.waitUs(uuid))));
    for (const { item } of started) {
      countWaiting(item.subscription.uuid, -1);
      if (!core.mayStart([item.row], now)) {
        lanes.finished(item.origin);
        core.giveBack([item.row]);
        continue;
      }
      core.track(deliver(item));
    }
  }

  async function deliver(delivery: Delivery): Promise<void> {
    const { row, event, subscription, origin } = delivery;
    const endWithinMs = core.leaseRoom.leftForExchangeMs(row, clock());
    const span = options.tracing?.deliveryAttempt(event.traceparent, {
      'notifications.match.uuid': row.uuid,
      'notifications.event.uuid': row.event_uuid,
      'notifications.subscription.uuid': subscription.uuid,
      'notifications.owner': row.owner,
      'notifications.destination': origin,
      'notifications.attempt': row.attempts + 1,
    });
    const { outcome, durationMs } = await options.destination.deliver({
      row,
      event,
      subscription,
      endWithinMs,
      traceparent: span?.traceparent,
    });
    if (span !== undefined) endDeliverySpan(span, outcome);
    if (outcome.kind === 'untried') {
      // No connection came free in time for the exchange to end within the lease: back to the
      // queue in its place.
      lanes.finished(origin);
      core.giveBack([row]);
      return;
    }
    const at = clock();
    // Any answer means the destination is up (what it said is the row's business); none at all,
    // when one could come, counts towards its being down. A broker's confirmation is an answer
    // without an HTTP status.
    if (outcome.kind === 'accepted' || ('status' in outcome && outcome.status !== null)) health.answered(origin, durationMs, at);
    else if (outcome.kind === 'later') health.noAnswer(origin, at);
    lanes.finished(origin);
    const after = afterAttempt('deliver', [row], outcome, { at, durationMs }, options.schedule);
    const settling = core.settle([row], after, { uuid: subscription.uuid, at, tell: event.source !== OPERATIONAL_SOURCE });
    // The slot is free: the next row of this origin goes now, and the runner may take in more.
    dispatch(origin);
    core.wake();
    try {
      const settled = await settling;
      if (after.result === 'readable') {
        if (settled.rows.has(row.uuid)) options.onReadable?.(subscription.uuid);
      } else if (settled.rows.has(row.uuid)) {
        options.metrics?.deliverySettled(
          after.result as DeliveryOutcome,
          durationMs / 1000,
          after.result === 'delivered' ? (at - row.created) / 1e6 : undefined,
        );
      }
      // Operational events written with it wait in the queue, due now.
      if (settled.notified > 0) core.wake();
      for (const disabled of settled.disabled) {
        subscriptionChanged({ kind: 'upsert', row: disabled });
        options.onSubscriptionChange({ kind: 'upsert', row: disabled });
      }
    } catch (error) {
      // Not recorded, and not for want of the database (its outcome would be held until then):
      // the row stays leased, and is tried again once the lease expires.
      options.onError(error);
    }
  }

  /** Dispatches again once the first row held back by its rate may start. */
  function wakeForRate(waitUs: number): void {
    const at = clock() + waitUs;
    if (rateWake !== undefined && rateWake.at <= at) return;
    if (rateWake !== undefined) clearTimeout(rateWake.timer);
    const timer = setTimeout(
      () => {
        rateWake = undefined;
        dispatch();
      },
      Math.ceil(waitUs / 1000),
    );
    rateWake = { timer, at };
  }

  /** Rows that have waited until their lease no longer has room for an exchange go back, keeping their place. */
  function giveBackExpiring(now: number): void {
    core.giveBackExpiring(now, (tooShort) => {
      // Origins with nothing here and nothing wrong start afresh when next seen.
      for (const origin of health.known()) if (!lanes.has(origin) && !health.isDown(origin)) forget(origin);
      return takeOutWaiting((d) => tooShort(d.row)).map((d) => d.row);
    });
  }

  function takeOutWaiting(which: (delivery: Delivery) => boolean): Delivery[] {
    const taken = lanes.removeWaiting(which);
    for (const d of taken) countWaiting(d.subscription.uuid, -1);
    return taken;
  }

  function countWaiting(subscription: string, delta: number): void {
    const count = (waitingOf.get(subscription) ?? 0) + delta;
    if (count > 0) waitingOf.set(subscription, count);
    else {
      waitingOf.delete(subscription);
      rateOf.delete(subscription);
    }
  }

  function subscriptionChanged(change: SubscriptionChange): void {
    subscriptions.changed(change);
    const uuid = change.kind === 'delete' ? change.uuid : change.row.uuid;
    originOf.delete(uuid);
    if (!waitingOf.has(uuid)) return;
    const current = change.kind === 'delete' ? undefined : change.row;
    const gone = current === undefined || current.deleted !== null || current.disabled !== null;
    const stale = takeOutWaiting(
      (d) => d.subscription.uuid === uuid && (gone || !sameDelivery(options.destination, d.subscription, current)),
    );
    // Deleted or disabled: its waiting rows are cancelled. Sent elsewhere or otherwise: they
    // go back, to be read again with the subscription as it is now.
    if (gone) cancel(stale.map((d) => d.row));
    else core.giveBack(stale.map((d) => d.row));
  }

  function forget(origin: string): void {
    health.forget(origin);
    if (lanes.has(origin)) return;
    for (const subscription of subscriptionsOf.get(origin) ?? []) if (originOf.get(subscription) === origin) originOf.delete(subscription);
    subscriptionsOf.delete(origin);
  }

  const runner = core.runner();
  return {
    ...runner,
    subscriptionChanged,
    downOrigins: () => health.downOrigins(),
    stop: () => {
      if (rateWake !== undefined) clearTimeout(rateWake.timer);
      rateWake = undefined;
      return runner.stop();
    },
  };
}

/** The outcome on the attempt's span: `later` and `permanent` are errors, with what the attempt record keeps. */
function endDeliverySpan(span: TraceSpan, outcome: AttemptOutcome): void {
  const attributes: SpanAttributes = { 'notifications.outcome': outcome.kind };
  if ('status' in outcome && outcome.status !== null) attributes['http.response.status_code'] = outcome.status;
  const failed = outcome.kind === 'later' || outcome.kind === 'permanent';
  span.end(attributes, failed ? (outcome.error ?? outcome.reason) : undefined);
}

/** Whether rows read with `before` would be delivered, and paced, as they would with `after`. */
function sameDelivery(destination: Destination, before: SubscriptionRow, after: SubscriptionRow): boolean {
  return destination.unchanged(before, after) && before.rate_limit === after.rate_limit && before.allowed_rate === after.allowed_rate;
}
