/**
 * Operational events: the CloudEvents the service emits about a subscription (disabled,
 * enabled again, failing), routed like any event but only to the subscriptions of its owner
 * that ask for them (`notices`), with no policy check (they tell the owner of their own
 * subscription), and never to the subscription they are about. A pipeline on `$` or `$.data`
 * (every subscription imported from the original service) would otherwise receive them among its
 * data events. A user subscribes with e.g. `"notices": true` and
 * `$[?$.type == 'svc.notifications.subscription.disabled']`.
 */
import type { Kysely } from 'kysely';
import { type MatchRow, pendingMatch } from '../db/stores/events.js';
import { type NoticeEvents, type SubscriptionNotice } from '../db/stores/subscription-notices.js';
import { OPERATIONAL_SOURCE } from '../operational-source.js';
import { subscriptionsByUuid } from '../db/stores/subscriptions.js';
import type { Database, SubscriptionRow } from '../db/tables.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import type { LiveMatcher, MatchedSubscription } from '../matching/live-matcher.js';
import { formatTimestamp } from '../time/clock.js';
import { timeOrderedUuid } from '../uuid.js';

export const OPERATIONAL_TYPE_PREFIX = 'svc.notifications.subscription.';

/** What the matcher tells; `about`'s owner is told, by matches of `about`'s other subscriptions. */
export function operationalEvents(matcher: LiveMatcher): NoticeEvents {
  return (notice, at) => {
    const uuid = timeOrderedUuid();
    const document: JsonObject = {
      specversion: '1.0',
      id: uuid,
      source: OPERATIONAL_SOURCE,
      type: `${OPERATIONAL_TYPE_PREFIX}${notice.kind}`,
      subject: notice.subscription.uuid,
      time: `${formatTimestamp(happened(notice, at))}Z`,
      datacontenttype: 'application/json',
      data: dataOf(notice),
    };
    return {
      event: {
        uuid,
        source: OPERATIONAL_SOURCE,
        event_id: uuid,
        type: document.type as string,
        spec_version: '1.0',
        body: JSON.stringify(document),
        received: at,
      },
      matches: ownersMatches(matcher, document, uuid, notice.subscription, at),
    };
  };
}

/** When what the notice tells of happened: the record's own time for a change of the record. */
function happened(notice: SubscriptionNotice, at: number): number {
  if (notice.kind === 'disabled') return notice.subscription.disabled ?? at;
  if (notice.kind === 'enabled') return notice.subscription.updated;
  return at;
}

function dataOf(notice: SubscriptionNotice): JsonObject {
  const { uuid, name, error, disabled } = notice.subscription;
  switch (notice.kind) {
    case 'disabled':
      return { subscription: uuid, name, error, disabled: disabled === null ? null : formatTimestamp(disabled) };
    case 'enabled':
      return { subscription: uuid, name };
    case 'failing':
      return { subscription: uuid, name, error: notice.error, failures: notice.failures };
  }
}

/**
 * The match rows of an operational event about `about`: its owner's other live subscriptions
 * that ask for notices and match it, due for delivery now (no policy check: the owner may see
 * their own subscription).
 */
export function ownersMatches(
  matcher: LiveMatcher,
  document: JsonValue,
  eventUuid: string,
  about: Pick<SubscriptionRow, 'uuid' | 'owner'>,
  now: number,
): MatchRow[] {
  return matcher
    .match(document)
    .filter((s: MatchedSubscription) => s.notices && s.owner === about.owner && s.uuid !== about.uuid)
    .map((s) => ({ ...pendingMatch(eventUuid, s, now), state: 'deliver' as const }));
}

/**
 * Routing an operational event again (eventretry): the subscription it is about, named by its
 * `subject`, says whose it is; none when that subscription is no longer there.
 */
export async function operationalMatchesAgain(
  db: Kysely<Database>,
  matcher: LiveMatcher,
  eventUuid: string,
  document: JsonValue,
  now: number,
): Promise<MatchRow[]> {
  const subject = isJsonObject(document) ? document.subject : undefined;
  if (typeof subject !== 'string') return [];
  const about = (await subscriptionsByUuid(db, [subject])).get(subject);
  return about === undefined ? [] : ownersMatches(matcher, document, eventUuid, about, now);
}
