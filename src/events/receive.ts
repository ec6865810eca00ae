/**
 * Receiving: each event is matched against the live subscriptions at once, and the event with
 * one match row per matching subscription is written in one group-committed transaction. The
 * answer waits for that commit: what was answered 200 survives a crash, and so does the work
 * of routing it (the match rows are the queue).
 */
import { randomUUID } from 'node:crypto';
import type { ReceivedEvent } from '../cloudevents/index.js';
import type { DatabaseHandle } from '../db/connect.js';
import { logEvent, pendingMatch, type LoggedEvent, type MatchRow } from '../db/events.js';
import type { LiveMatcher } from '../matching/live-matcher.js';
import type { Clock } from '../time/clock.js';

export interface ReceiveDependencies {
  database: DatabaseHandle;
  matcher: LiveMatcher;
  clock: Clock;
}

export async function receiveEvent(deps: ReceiveDependencies, event: ReceivedEvent): Promise<LoggedEvent> {
  const now = deps.clock();
  const eventUuid = randomUUID();
  const matches: MatchRow[] = deps.matcher.match(event.document).map((subscription) => pendingMatch(eventUuid, subscription, now));
  const row = {
    uuid: eventUuid,
    source: event.source,
    event_id: event.id,
    type: event.type,
    spec_version: event.specVersion,
    body: JSON.stringify(event.document),
    received: now,
  };
  return deps.database.write((tx) => logEvent(tx, row, matches));
}
