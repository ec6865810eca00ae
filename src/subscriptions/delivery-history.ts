/**
 * What became of the events a subscription matched, for its owner (`GET
 * /eventmatch/{uuid}/deliveries`): each match (ELM) newest first, with its policy and target
 * codes, its state, and every attempt (policy calls that got no decision, and tries at the
 * target), oldest first.
 *
 * The same owner and not-found rules as the subscription service, with one difference: a
 * deleted subscription's history stays readable by its owner, because the event log keeps it
 * and "what happened to my last deliveries?" is asked after a delete too.
 */
import type { DatabaseHandle } from '../db/connect.js';
import { attemptsOfMatches, type DeliveryAttempt, type DeliveryMatch, findOwnedSubscriptionUuid, recentMatches } from '../db/deliveries.js';
import { subscriptionNotFound } from '../errors.js';
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
}

export function deliveryHistory(database: DatabaseHandle): DeliveryHistory {
  const { db } = database;
  return {
    async list(owner, uuid, page) {
      const key = canonicalUuid(uuid);
      const subscription = key === undefined ? undefined : await findOwnedSubscriptionUuid(db, owner, key);
      if (subscription === undefined) throw subscriptionNotFound(uuid);
      const matches = await recentMatches(db, subscription, page);
      const attempts = await attemptsOfMatches(
        db,
        matches.map((m) => m.uuid),
      );
      return toDeliveryRecords(matches, attempts);
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
