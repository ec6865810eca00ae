/**
 * Receiving: each event is matched against the live subscriptions at once, and the event with
 * one match row per matching subscription is written with the events that arrived with it,
 * in one group-committed transaction. The answer waits for that commit: what was answered 200
 * survives a crash, and so does the work of routing it (the match rows are the queue).
 */
import type { ReceivedEvent } from '../cloudevents/index.js';
import { pendingMatch, type EventRow, type LoggedEvent } from '../db/events.js';
import type { LiveMatcher } from '../matching/live-matcher.js';
import type { Handoff } from '../routing/handoff.js';
import type { Clock } from '../time/clock.js';
import type { EventLogBatch } from './event-log-batch.js';
import { timeOrderedUuid } from '../uuid.js';

export interface ReceiveDependencies {
  eventLog: EventLogBatch;
  matcher: LiveMatcher;
  clock: Clock;
  /** When given, new match rows are written leased to `holder` and handed to the policy stage. */
  handoff?: { to: Handoff; holder: string; leaseUs: number };
}

export async function receiveEvent(deps: ReceiveDependencies, event: ReceivedEvent): Promise<LoggedEvent> {
  const now = deps.clock();
  const eventUuid = timeOrderedUuid();
  const row: EventRow = {
    uuid: eventUuid,
    source: event.source,
    event_id: event.id,
    type: event.type,
    spec_version: event.specVersion,
    body: JSON.stringify(event.document),
    received: now,
  };
  const matches = deps.matcher.match(event.document).map((subscription) => pendingMatch(eventUuid, subscription, now));
  const { handoff } = deps;
  const handing = handoff !== undefined && matches.length > 0 && handoff.to.reserve(matches.length);
  if (handing) {
    for (const match of matches) {
      match.locked_by = handoff.holder;
      match.locked_until = now + handoff.leaseUs;
    }
  }
  let logged: LoggedEvent;
  try {
    logged = await deps.eventLog.log({ event: row, matches });
  } catch (error) {
    if (handing) handoff.to.release(matches.length);
    throw error;
  }
  if (handing) {
    if (logged.duplicate) handoff.to.release(matches.length);
    else handoff.to.put(matches.map((match) => ({ row: match, event: row, document: event.document })));
  }
  return logged;
}
