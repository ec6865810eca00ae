/**
 * `POST /eventmatch/{uuid}/deliveries/{elm}/retry`: one delivery of the owner's subscription
 * queued again now, whatever became of it: through the policy check again, then to the target,
 * its earlier attempts kept in its history and its retry schedule started afresh.
 *
 * - not the caller's subscription (missing, deleted, malformed, someone else's): 404
 *   SUBSCRIPTION_NOT_FOUND; not one of its deliveries: 404 DELIVERY_NOT_FOUND;
 * - the subscription disabled: 409 SUBSCRIPTION_DISABLED (its deliveries would only be cancelled);
 * - a runner of some instance holds the delivery (in flight, or waiting its turn in memory):
 *   409 DELIVERY_IN_PROGRESS with Retry-After, and nothing changes; once it has settled, the
 *   retry can be asked again. So a delivery is never in flight twice.
 */
import type { DatabaseHandle } from '../db/connect.js';
import { attemptsOfMatches, matchOfSubscription } from '../db/deliveries.js';
import { requeueMatch } from '../db/matches.js';
import { findLiveSubscription } from '../db/subscriptions.js';
import { ServiceError, serviceError, subscriptionNotFound } from '../errors.js';
import type { Clock } from '../time/clock.js';
import { canonicalUuid } from '../uuid.js';
import { type DeliveryRecord, toDeliveryRecords } from './delivery-history.js';

/** When to ask again about a delivery being worked on: a delivery takes about this long at most. */
const IN_PROGRESS_RETRY_AFTER_S = 1;

export interface DeliveryRetryDependencies {
  database: DatabaseHandle;
  clock: Clock;
  /** A delivery was queued again: the policy runner should look at the queue now. */
  onRequeued?: () => void;
}

export interface DeliveryRetry {
  /** Queues `elm` again; resolves with the delivery as the history shows it, queued. */
  retry(owner: string, uuid: string, elm: string): Promise<DeliveryRecord>;
}

type Outcome = { record: DeliveryRecord } | { refusal: ServiceError };

export function deliveryRetry(deps: DeliveryRetryDependencies): DeliveryRetry {
  return {
    async retry(owner, uuid, elm) {
      const key = canonicalUuid(uuid);
      if (key === undefined) throw subscriptionNotFound(uuid);
      const match = canonicalUuid(elm);
      const now = deps.clock();
      // Refusals are returned, not thrown, out of the shared transaction: they changed nothing.
      const outcome = await deps.database.write(async (tx): Promise<Outcome> => {
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
  };
}

function inProgress(elm: string): ServiceError {
  const template = serviceError('DELIVERY_IN_PROGRESS', elm);
  return new ServiceError(template.code, template.message, IN_PROGRESS_RETRY_AFTER_S);
}
