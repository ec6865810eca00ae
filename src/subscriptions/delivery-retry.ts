/**
 * Deliveries of the owner's subscription queued again now, through the policy check again,
 * then to the target, their earlier attempts kept in their history and their retry schedule
 * started afresh:
 * - `POST /eventmatch/{uuid}/deliveries/{elm}/retry`: one delivery, whatever became of it;
 * - `POST /eventmatch/{uuid}/deliveries/recover`: every delivery that failed, or was cancelled,
 *   among those created in a window. A live subscription's deliveries are cancelled only by a
 *   disable (the owner's, or the service's after a failure): the runners cancel rows of a
 *   subscription deleted or disabled, and a delete ends the subscription. So these are what a
 *   broken target or a disable left undelivered; denied ones stay denied.
 *
 * Both, in one transaction:
 * - not the caller's subscription (missing, deleted, malformed, someone else's): 404
 *   SUBSCRIPTION_NOT_FOUND; (retry) not one of its deliveries: 404 DELIVERY_NOT_FOUND;
 * - the subscription disabled: 409 SUBSCRIPTION_DISABLED (its deliveries would only be cancelled);
 * - a runner of some instance holds the delivery (in flight, or waiting its turn in memory):
 *   left to it. A retry answers 409 DELIVERY_IN_PROGRESS with Retry-After; a recover leaves it
 *   out of its count. So a delivery is never in flight twice.
 * - (recover) more deliveries in the window than RECOVER_LIMIT: 400 RECOVER_WINDOW_TOO_LARGE, and
 *   none is queued. All or none, so that the answer's count is the whole story.
 */
import type { DatabaseHandle } from '../db/connect.js';
import { attemptsOfMatches, matchOfSubscription } from '../db/stores/deliveries.js';
import { countRecoverable, type CreatedWindow, requeueMatch, requeueRecoverable } from '../db/stores/matches.js';
import { findLiveSubscription } from '../db/stores/subscriptions.js';
import { ServiceError, serviceError, subscriptionNotFound } from '../errors.js';
import { type Clock, parseTimestamp } from '../time/clock.js';
import { canonicalUuid } from '../uuid.js';
import { type DeliveryRecord, toDeliveryRecords } from './delivery-history.js';

/** When to ask again about a delivery being worked on: a delivery takes about this long at most. */
const IN_PROGRESS_RETRY_AFTER_S = 1;

export interface DeliveryRetryDependencies {
  database: DatabaseHandle;
  clock: Clock;
  /** Deliveries were queued again: the policy runner should look at the queue now. */
  onRequeued?: () => void;
  /** The most deliveries one recover queues again (RECOVER_LIMIT by default); a window with more is refused. */
  recoverLimit?: number;
}

/**
 * A recover rewrites its rows in one transaction, every index of each row included: about 5 µs a
 * row on SQLite, which holds the process meanwhile, and 25 µs on PostgreSQL, whose statements
 * NOTIFICATIONS_DATABASE_TIMEOUT bounds (5 s by default: 200,000 did not fit). At this many,
 * 0.3 s on SQLite and 1.7 s on PostgreSQL on the reference machine (docs/delivery.md).
 */
export const RECOVER_LIMIT = 50_000;

/** What a recover is asked for: timestamps as the records write them (UTC). */
export interface RecoverWindow {
  since: string;
  /** Absent or null: up to now. */
  until?: string | null;
}

export interface DeliveryRetry {
  /** Queues `elm` again; resolves with the delivery as the history shows it, queued. */
  retry(owner: string, uuid: string, elm: string): Promise<DeliveryRecord>;
  /** Queues again the failed and cancelled deliveries created within `window` (both ends included); resolves with how many. */
  recover(owner: string, uuid: string, window: RecoverWindow): Promise<{ requeued: number }>;
}

type Outcome<T> = T | { refusal: ServiceError };

export function deliveryRetry(deps: DeliveryRetryDependencies): DeliveryRetry {
  return {
    async retry(owner, uuid, elm) {
      const key = canonicalUuid(uuid);
      if (key === undefined) throw subscriptionNotFound(uuid);
      const match = canonicalUuid(elm);
      const now = deps.clock();
      // Refusals are returned, not thrown, out of the shared transaction: they changed nothing.
      const outcome = await deps.database.write(async (tx): Promise<Outcome<{ record: DeliveryRecord }>> => {
        const subscription = await findLiveSubscription(tx, owner, key);
        if (subscription === undefined) return { refusal: subscriptionNotFound(uuid) };
        if (match === undefined) return { refusal: serviceError('DELIVERY_NOT_FOUND', elm, uuid) };
        if (subscription.disabled !== null) return { refusal: serviceError('SUBSCRIPTION_DISABLED', uuid) };
        const result = await requeueMatch(tx, key, match, now);
        if (result === 'missing') return { refusal: serviceError('DELIVERY_NOT_FOUND', elm, uuid) };
        if (result === 'leased') return { refusal: inProgress(elm) };
        const row = await matchOfSubscription(tx, key, match);
        if (row === undefined) return { refusal: serviceError('DELIVERY_NOT_FOUND', elm, uuid) };
        const [record] = toDeliveryRecords([row], await attemptsOfMatches(tx, [match]));
        return { record: record! };
      });
      if ('refusal' in outcome) throw outcome.refusal;
      deps.onRequeued?.();
      return outcome.record;
    },

    async recover(owner, uuid, window) {
      const created = createdWindow(window);
      const key = canonicalUuid(uuid);
      if (key === undefined) throw subscriptionNotFound(uuid);
      const now = deps.clock();
      const outcome = await deps.database.write(async (tx): Promise<Outcome<{ requeued: number }>> => {
        const subscription = await findLiveSubscription(tx, owner, key);
        if (subscription === undefined) return { refusal: subscriptionNotFound(uuid) };
        if (subscription.disabled !== null) return { refusal: serviceError('SUBSCRIPTION_DISABLED', uuid, 'recover') };
        const found = await countRecoverable(tx, key, created, now);
        const limit = deps.recoverLimit ?? RECOVER_LIMIT;
        if (found > limit) return { refusal: serviceError('RECOVER_WINDOW_TOO_LARGE', found, limit) };
        return { requeued: await requeueRecoverable(tx, key, created, now) };
      });
      if ('refusal' in outcome) throw outcome.refusal;
      if (outcome.requeued > 0) deps.onRequeued?.();
      return outcome;
    },
  };
}

const TIMESTAMP_FORMAT = 'a UTC time YYYY-MM-DDTHH:MM:SS.ffffff, as the delivery history writes created';

/** The window in µs; a 400 naming the field for a malformed time, or one that ends before it starts. */
function createdWindow(window: RecoverWindow): CreatedWindow {
  const since = timestampField(window.since, 'body.since');
  if (window.until === undefined || window.until === null) return { since };
  const until = timestampField(window.until, 'body.until');
  if (since > until) throw serviceError('FIELD_INVALID', 'body.since', `${window.since} is after body.until ${window.until}`);
  return { since, until };
}

function timestampField(text: string, field: string): number {
  const micros = parseTimestamp(text);
  if (micros === undefined) throw serviceError('FIELD_INVALID', field, `must be ${TIMESTAMP_FORMAT}, not ${JSON.stringify(text)}`);
  return micros;
}

function inProgress(elm: string): ServiceError {
  const template = serviceError('DELIVERY_IN_PROGRESS', elm);
  return new ServiceError(template.code, template.message, IN_PROGRESS_RETRY_AFTER_S);
}
