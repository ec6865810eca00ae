/**
 * The delivery history of one subscription, read from the event log: its matches (newest
 * first, with the event each is for) and every attempt made for them. A page costs three
 * queries whatever its size (owner check, matches, attempts), never one per match.
 */
import type { Kysely } from 'kysely';
import type { AttemptsTable, Database, MatchState } from '../tables.js';

export interface DeliveryMatch {
  uuid: string;
  created: number;
  state: MatchState;
  policy_code: number | null;
  target_code: number | null;
  event_uuid: string;
  event_id: string;
  event_type: string;
  event_source: string;
}

export type DeliveryAttempt = AttemptsTable;

/**
 * The uuid of `owner`'s subscription, deleted ones included: the event log keeps a deleted
 * subscription's history, and its owner may still read it. Anyone else's is absent.
 */
export async function findOwnedSubscriptionUuid(db: Kysely<Database>, owner: string, uuid: string): Promise<string | undefined> {
  const row = await db.selectFrom('subscriptions').select('uuid').where('uuid', '=', uuid).where('owner', '=', owner).executeTakeFirst();
  return row?.uuid;
}

/** A page of the subscription's matches, newest first (index matches_subscription_created). */
export async function recentMatches(
  db: Kysely<Database>,
  subscriptionUuid: string,
  page: { limit: number; offset: number },
): Promise<DeliveryMatch[]> {
  return (
    matchesWithEvents(db)
      .where('matches.subscription_uuid', '=', subscriptionUuid)
      .orderBy('matches.created', 'desc')
      // Ties (same microsecond, e.g. an event routed again by eventretry) in a stable order.
      .orderBy('matches.uuid', 'desc')
      .limit(page.limit)
      .offset(page.offset)
      .execute()
  );
}

/** One match of the subscription, as the history shows it; undefined when it is not one of its matches. */
export async function matchOfSubscription(
  db: Kysely<Database>,
  subscriptionUuid: string,
  matchUuid: string,
): Promise<DeliveryMatch | undefined> {
  return matchesWithEvents(db)
    .where('matches.subscription_uuid', '=', subscriptionUuid)
    .where('matches.uuid', '=', matchUuid)
    .executeTakeFirst();
}

/**
 * The logged event of one match of the subscription, as its JSON text (structured mode, the
 * producer's bytes); undefined when it is not one of its matches, or its event was purged.
 */
export async function eventOfMatch(db: Kysely<Database>, subscriptionUuid: string, matchUuid: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('matches')
    .innerJoin('events', 'events.uuid', 'matches.event_uuid')
    .select('events.body')
    .where('matches.subscription_uuid', '=', subscriptionUuid)
    .where('matches.uuid', '=', matchUuid)
    .executeTakeFirst();
  return row?.body;
}

function matchesWithEvents(db: Kysely<Database>) {
  return db
    .selectFrom('matches')
    .innerJoin('events', 'events.uuid', 'matches.event_uuid')
    .select([
      'matches.uuid',
      'matches.created',
      'matches.state',
      'matches.policy_code',
      'matches.target_code',
      'events.uuid as event_uuid',
      'events.event_id',
      'events.type as event_type',
      'events.source as event_source',
    ]);
}

/** Every attempt of these matches, oldest first within each match (index attempts_match). */
export async function attemptsOfMatches(db: Kysely<Database>, matchUuids: readonly string[]): Promise<DeliveryAttempt[]> {
  if (matchUuids.length === 0) return [];
  return db
    .selectFrom('attempts')
    .selectAll()
    .where('match_uuid', 'in', [...matchUuids])
    .orderBy('match_uuid')
    .orderBy('at')
    .orderBy('uuid')
    .execute();
}
