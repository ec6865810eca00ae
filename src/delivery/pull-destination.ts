/**
 * Pull: nothing is sent. The attempt answers that the row now waits for its reader; settling it
 * (runners/after-attempt.ts, db/stores/pull.ts) makes it `pending` with a cursor, readable at
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
