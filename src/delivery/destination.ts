/**
 * Where a delivery goes: the one thing the delivery runner asks of a subscription's destination.
 * The runner owns everything around an attempt (leases, lanes and their health, rate limits,
 * cancelling on subscription changes, settling); a destination owns only the attempt itself
 * and answers with an outcome that runners/after-attempt.ts understands, which alone says what
 * then becomes of the row. A new kind of destination is a new implementation, never a branch in
 * the runner; one that picks among implementations by subscription is a Destination too.
 *
 * - Push over HTTP (push-destination.ts): POSTs the event to the target URL; the target's answer
 *   is the outcome.
 * - Pull (pull-destination.ts): sends nothing; its attempt answers `waiting`, which settles the
 *   row `pending` with a cursor, readable by the subscriber (db/stores/pull.ts); the reader's
 *   acknowledgement makes it delivered later. Its lane is the subscription itself.
 * - Message brokers (broker-destination.ts; the protocols in brokers/): publish with a client in
 *   the outbound thread (broker-publisher.ts): a confirmation is `accepted` without a status, a
 *   broker that cannot be reached `later` without a status (so the lane's health marks it down as
 *   it does an HTTP origin), a refused publish (authorization, no such exchange or stream)
 *   `permanent`. Their lane is the broker's address.
 *
 * Which one a subscription's rows go to is its kind's (destinations/kinds.ts), by its `delivery`
 * and its target URL's scheme: `destinationByKind` (destination-by-kind.ts).
 */
import type { EventRow } from '../db/stores/events.js';
import type { MatchesTable, SubscriptionRow } from '../db/tables.js';
import type { AttemptOutcome } from '../runners/after-attempt.js';

/** What a destination is given to deliver one row. */
export interface DeliveryAttempt {
  row: MatchesTable;
  /** The event as stored; the subscription's extensions are added by the destination. */
  event: EventRow;
  subscription: SubscriptionRow;
  /** By when (ms from now) the attempt must be over for its outcome to be recorded under the row's lease. */
  endWithinMs: number;
  /** The attempt's span (W3C traceparent) when tracing: a destination passes it on with what it sends. */
  traceparent?: string;
}

/** What came of one attempt, and how long it took (ms). */
export interface Attempted {
  outcome: AttemptOutcome;
  durationMs: number;
}

export interface Destination {
  /**
   * The lane the subscription's rows wait in: each lane has its own slots and health, so a slow
   * or dead destination holds back only the rows of its lane.
   */
  laneOf(subscription: SubscriptionRow): string;
  /** Whether rows read with the subscription as `before` would be delivered as with `after`. */
  unchanged(before: SubscriptionRow, after: SubscriptionRow): boolean;
  /** One attempt at one row. Never rejects: every failure is an outcome. */
  deliver(attempt: DeliveryAttempt): Promise<Attempted>;
}
