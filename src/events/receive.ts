/**
 * Receiving: each event is matched against the live subscriptions at once, and the event with
 * one match row per matching subscription is written with the events that arrived with it,
 * in one group-committed transaction. The answer waits for that commit: what was answered 200
 * survives a crash, and so does the work of routing it (the match rows are the queue).
 */
import type { ReceivedEvent } from '../cloudevents/index.js';
import { pendingMatch, type LoggedEvent } from '../db/events.js';
import type { LiveMatcher } from '../matching/live-matcher.js';
import type { Clock } from '../time/clock.js';
import type { EventLogBatch } from './event-log-batch.js';
import { timeOrderedUuid } from '../uuid.js';

export interface ReceiveDependencies {
  eventLog: EventLogBatch;
  matcher: LiveMatcher;
  clock: Clock;
}

export function receiveEvent(deps: ReceiveDependencies, event: ReceivedEvent): Promise<LoggedEvent> {
  const now = deps.clock();
  const eventUuid = timeOrderedUuid();
  return deps.eventLog.log({
    event: {
      uuid: eventUuid,
      source: event.source,
      event_id: event.id,
      type: event.type,
      spec_version: event.specVersion,
      body: JSON.stringify(event.document),
      received: now,
    },
    matches: deps.matcher.match(event.document).map((subscription) => pendingMatch(eventUuid, subscription, now)),
  });
}
