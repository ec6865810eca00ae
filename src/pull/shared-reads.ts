/**
 * Readers of one subscription woken together share their database calls: thousands of streams
 * and long polls on a subscription cost one look-up, one read and one acknowledgement per wake,
 * not one each.
 *
 * - A look-up (whose subscription it is) joins one in flight for the same owner and
 *   subscription, unless the subscription was written since it began (this instance's writes
 *   are heard at their commit, before their answer; other instances' once notified).
 * - A read joins one in flight for the same subscription, cursor, limit and extensions, unless
 *   the subscription was woken since that read began: a read begun before a wake may have missed
 *   the rows the wake announced, and a reader woken by them must see them.
 * - Where every readable row is announced by a wake (`announced`: SQLite always, PostgreSQL
 *   while its listener listens), a read that found the end of a subscription's rows, with no
 *   wake since it began, answers later reads after that end at once, with nothing: a long poll
 *   asking again after its answer costs no read until the next wake. On PostgreSQL a row
 *   another instance made readable is seen from its announcement on (milliseconds).
 * - Acknowledging up to a cursor this instance has already acknowledged (committed) is skipped,
 *   and one in flight up to it or beyond is waited for. That is safe because cursors are given in
 *   commit order (db/stores/pull.ts): once every pending row up to C is acknowledged, no row up to C
 *   becomes pending again (a row sent again gets a new cursor).
 */
import type { SubscriptionChange } from '../db/stores/subscriptions.js';
import type { SubscriptionRow } from '../db/tables.js';
import { parseCursor, type PulledEvent, type PullReader } from './reader.js';
import type { PullWaiters } from './waiters.js';
import { RecentlyUsed } from '../recently-used.js';

/** Subscriptions whose acknowledged cursor, or the end of whose rows, is remembered (the oldest forgotten first: forgetting costs a statement). */
const REMEMBERED = 10_000;

interface Acknowledged {
  /** Committed up to here. */
  upTo: number;
  /** The highest cursor asked for; the next write goes up to it. */
  wanted: number;
  running: { upTo: number; done: Promise<void> } | undefined;
}

export interface SharedReads extends PullReader {
  /** A subscription was written: look-ups begun before do not answer for it any more. */
  subscriptionChanged(change: SubscriptionChange): void;
}

/**
 * `announced`: whether every row made readable is announced by a wake now (the ends of
 * subscriptions' rows are remembered only then).
 */
export function sharedReads(reader: PullReader, waiters: PullWaiters, announced: () => boolean = () => true): SharedReads {
  const lookups = new Map<string, Map<string, Promise<SubscriptionRow>>>();
  const reads = new Map<string, Map<string, Promise<PulledEvent[]>>>();
  const acknowledged = new RecentlyUsed<string, Acknowledged>(REMEMBERED);
  /** Per subscription, the cursor after which no row was readable at a read no wake has followed. */
  const ends = new RecentlyUsed<string, number>(REMEMBERED);
  /** Counts wakes: a read that saw it move may have missed rows. */
  let wakes = 0;
  waiters.onWake((subscription) => {
    wakes++;
    if (subscription === undefined) {
      reads.clear();
      ends.clear();
    } else {
      reads.delete(subscription);
      ends.delete(subscription);
    }
  });

  const subscription = (owner: string, uuid: string): Promise<SubscriptionRow> => {
    let ofUuid = lookups.get(uuid);
    const joined = ofUuid?.get(owner);
    if (joined) return joined;
    if (!ofUuid) lookups.set(uuid, (ofUuid = new Map()));
    return inFlight(lookups, uuid, ofUuid, owner, reader.subscription(owner, uuid));
  };

  const read = (subscription: SubscriptionRow, after: number, limit: number): Promise<PulledEvent[]> => {
    const key = `${after}\u0000${limit}\u0000${subscription.extensions}`;
    let ofSubscription = reads.get(subscription.uuid);
    const joined = ofSubscription?.get(key);
    if (joined) return joined;
    const end = ends.get(subscription.uuid);
    if (end !== undefined && after >= end && announced()) return Promise.resolve([]);
    if (!ofSubscription) reads.set(subscription.uuid, (ofSubscription = new Map()));
    const wakesBefore = wakes;
    const reading = reader.read(subscription, after, limit).then((events) => {
      if (events.length < limit && wakes === wakesBefore && announced())
        ends.set(subscription.uuid, events.length === 0 ? after : parseCursor(events[events.length - 1]!.cursor)!);
      return events;
    });
    return inFlight(reads, subscription.uuid, ofSubscription, key, reading);
  };

  const acknowledge = async (subscription: SubscriptionRow, cursor: number): Promise<void> => {
    let state = acknowledged.get(subscription.uuid);
    if (state === undefined) acknowledged.set(subscription.uuid, (state = { upTo: -1, wanted: -1, running: undefined }));
    state.wanted = Math.max(state.wanted, cursor);
    while (cursor > state.upTo) {
      if (state.running) {
        // A failed write fails those waiting for it; one that was only lower is followed by ours.
        if (state.running.upTo >= cursor) await state.running.done;
        else await state.running.done.catch(() => undefined);
        continue;
      }
      const upTo = state.wanted;
      const running = {
        upTo,
        done: reader.acknowledge(subscription, upTo).then(
          () => {
            state.upTo = Math.max(state.upTo, upTo);
            state.running = undefined;
          },
          (error: unknown) => {
            state.running = undefined;
            throw error;
          },
        ),
      };
      state.running = running;
      await running.done;
    }
  };

  return {
    subscription,
    read,
    acknowledge,
    subscriptionChanged: (change) => lookups.delete(change.kind === 'delete' ? change.uuid : change.row.uuid),
  };
}

/** Sets `key` to `value` in `map`, forgetting the oldest key beyond REMEMBERED; returns `value`. */
/** `work`, joinable at `groups[group][key]` until it settles (or the group is dropped). */
function inFlight<T>(
  groups: Map<string, Map<string, Promise<T>>>,
  group: string,
  ofGroup: Map<string, Promise<T>>,
  key: string,
  work: Promise<T>,
): Promise<T> {
  const joinable = work.finally(() => {
    if (ofGroup.get(key) === joinable) ofGroup.delete(key);
    if (ofGroup.size === 0 && groups.get(group) === ofGroup) groups.delete(group);
  });
  ofGroup.set(key, joinable);
  return joinable;
}
