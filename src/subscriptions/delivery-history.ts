/**
 * What became of the events a subscription matched, for its owner (`GET
 * /eventmatch/{uuid}/deliveries`): each match (ELM) newest first, with its policy and target
 * codes, its state, and every attempt (policy calls that got no decision, and tries at the
 * target), oldest first; and the event of one of them (`GET
 * /eventmatch/{uuid}/deliveries/{elm}/event`), to try an expression on.
 *
 * The same owner and not-found rules as the subscription service, with one difference: a
 * deleted subscription's history stays readable by its owner, because the event log keeps it
 * and "what happened to my last deliveries?" is asked after a delete too.
 */
import type { DatabaseHandle } from '../db/connect.js';
import {
  attemptsOfMatches,
  type DeliveryAttempt,
  type DeliveryMatch,
  eventOfMatch,
  findOwnedSubscriptionUuid,
  recentMatches,
} from '../db/stores/deliveries.js';
import { serviceError, subscriptionNotFound } from '../errors.js';
import { formatTimestamp } from '../time/clock.js';
import { canonicalUuid } from '../uuid.js';
import type { Page } from './input.js';

export interface DeliveryRecord {
  elm: string;
  event: { uuid: string; id: string; type: string; source: string };
  created: string;
  state: DeliveryMatch['state'];
  policy: number | null;
  target: number | null;
  attempts: Array<{ at: string; stage: DeliveryAttempt['stage']; status: number | null; error: string | null; duration_ms: number }>;
}

export interface DeliveryHistory {
  /** A page of the history of `owner`'s subscription `uuid`; not found (404) for anyone else's, or a malformed uuid. */
  list(owner: string, uuid: string, page: Page): Promise<DeliveryRecord[]>;
  /**
   * The event of delivery `elm`, as the log holds it: its JSON text, the producer's bytes (what
   * was matched; a subscription's extensions are added only to what is sent). 404
   * DELIVERY_NOT_FOUND when `elm` is not one of the subscription's, or its event was purged.
   */
  event(owner: string, uuid: string, elm: string): Promise<string>;
}

export function deliveryHistory(database: DatabaseHandle): DeliveryHistory {
  const { db } = database;
  const owned = async (owner: string, uuid: string): Promise<string> => {
    const key = canonicalUuid(uuid);
    const subscription = key === undefined ? undefined : await findOwnedSubscriptionUuid(db, owner, key);
    if (subscription === undefined) throw subscriptionNotFound(uuid);
    return subscription;
  };
  return {
    async list(owner, uuid, page) {
      const subscription = await owned(owner, uuid);
      const matches = await recentMatches(db, subscription, page);
      const attempts = await attemptsOfMatches(
        db,
        matches.map((m) => m.uuid),
      );
      return toDeliveryRecords(matches, attempts);
    },

    async event(owner, uuid, elm) {
      const subscription = await owned(owner, uuid);
      const match = canonicalUuid(elm);
      const body = match === undefined ? undefined : await eventOfMatch(db, subscription, match);
      if (body === undefined) throw serviceError('DELIVERY_NOT_FOUND', elm, uuid);
      return body;
    },
  };
}

export function toDeliveryRecords(matches: readonly DeliveryMatch[], attempts: readonly DeliveryAttempt[]): DeliveryRecord[] {
  const byMatch = new Map<string, DeliveryRecord['attempts']>();
  for (const a of attempts) {
    const list = byMatch.get(a.match_uuid) ?? [];
    list.push({ at: formatTimestamp(a.at), stage: a.stage, status: a.status, error: a.error, duration_ms: a.duration_ms });
    byMatch.set(a.match_uuid, list);
  }
  return matches.map((m) => ({
    elm: m.uuid,
    event: { uuid: m.event_uuid, id: m.event_id, type: m.event_type, source: m.event_source },
    created: formatTimestamp(m.created),
    state: m.state,
    policy: m.policy_code,
    target: m.target_code,
    attempts: byMatch.get(m.uuid) ?? [],
  }));
}
