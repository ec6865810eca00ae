/**
 * Pull: nothing is sent. The attempt answers that the row now waits for its reader; settling it
 * (routing/after-attempt.ts, db/pull.ts) makes it `pending` with a cursor, readable at
 * GET /eventmatch/{uuid}/events. Each subscription is its own lane, so one subscription's rows
 * never wait behind another's.
 */
import type { Destination } from './destination.js';

export function pullDestination(): Destination {
  return {
    laneOf: (subscription) => `pull:${subscription.uuid}`,
    // Nothing of the subscription goes into the row's attempt: its extensions are added when read.
    unchanged: () => true,
    deliver: async () => ({ outcome: { kind: 'waiting' }, durationMs: 0 }),
  };
}

/** Push subscriptions to `push`, pull subscriptions to `pull`. */
export function destinationByDelivery(push: Destination, pull: Destination): Destination {
  const of = (delivery: string) => (delivery === 'pull' ? pull : push);
  return {
    laneOf: (subscription) => of(subscription.delivery).laneOf(subscription),
    unchanged: (before, after) => before.delivery === after.delivery && of(after.delivery).unchanged(before, after),
    deliver: (attempt) => of(attempt.subscription.delivery).deliver(attempt),
  };
}
