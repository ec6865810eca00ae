/**
 * The destination the server delivers with: each subscription's rows go to the Destination that
 * handles its kind (destinations/kinds.ts: pull by `delivery`, push by the target URL's scheme).
 */
import type { SubscriptionRow } from '../db/tables.js';
import { type DestinationHandler, kindOfSubscription } from '../destinations/kinds.js';
import type { Destination } from './destination.js';

export type DestinationHandlers = Readonly<Record<DestinationHandler, Destination>>;

export function destinationByKind(handlers: DestinationHandlers): Destination {
  const handlerOf = (subscription: SubscriptionRow) => kindOfSubscription(subscription).handler;
  const of = (subscription: SubscriptionRow) => handlers[handlerOf(subscription)];
  return {
    laneOf: (subscription) => of(subscription).laneOf(subscription),
    unchanged: (before, after) => handlerOf(before) === handlerOf(after) && of(after).unchanged(before, after),
    deliver: (attempt) => of(attempt.subscription).deliver(attempt),
  };
}
