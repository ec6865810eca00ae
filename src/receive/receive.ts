/**
 * Receiving: each event is matched against the live subscriptions at once, and the event with
 * one match row per matching subscription is written with the events that arrived with it,
 * in one group-committed transaction. The answer waits for that commit: what was answered 200
 * survives a crash, and so does the work of routing it (the match rows are the queue).
 *
 * Routing again (eventretry): a logged event is matched the same way, and its new match rows
 * are written the same way, in one transaction with the check that leaves out subscriptions
 * whose match of it is still in progress.
 */
import type { ReceivedEvent } from '../cloudevents/index.js';
import type { DatabaseHandle } from '../db/connect.js';
import { subscriptionsWithUnfinishedMatch } from '../db/stores/event-log.js';
import { type EventRow, eventsByUuid, insertMatches, type LoggedEvent, type MatchRow, pendingMatch } from '../db/stores/events.js';
import { isJsonObject, type JsonValue } from '../json.js';
import type { LiveMatcher } from '../matching/live-matcher.js';
import type { Handoff } from '../runners/handoff.js';
import { OPERATIONAL_SOURCE } from '../operational-source.js';
import type { Clock } from '../time/clock.js';
import type { Tracing } from '../tracing/tracing.js';
import { timeOrderedUuid } from '../uuid.js';
import type { EventLogBatch } from './event-log-batch.js';
import { operationalMatchesAgain } from './operational-events.js';
import { queueNotification } from '../db/subscription-notifications.js';

export interface ReceiveDependencies {
  eventLog: EventLogBatch;
  matcher: LiveMatcher;
  clock: Clock;
  /** When given, new match rows are written leased to `holder` and handed to the policy stage. */
  handoff?: { to: Handoff; holder: string; leaseUs: number };
  /** When given, each event has a receive span, stored with it for the spans of its policy calls and deliveries. */
  tracing?: Tracing;
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
    body: event.text,
    received: now,
  };
  const span = deps.tracing?.receive(tracingExtension(event), {
    'cloudevents.event_id': event.id,
    'cloudevents.event_source': event.source,
    'cloudevents.event_type': event.type,
    'cloudevents.event_spec_version': event.specVersion,
  });
  if (span !== undefined) row.traceparent = span.traceparent;
  const matches = newMatches(deps.matcher, eventUuid, event.document, now);
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
    span?.end(undefined, error instanceof Error ? error.message : String(error));
    throw error;
  }
  span?.end({
    'notifications.event.uuid': logged.uuid,
    'notifications.matches': logged.matches,
    'notifications.duplicate': logged.duplicate,
  });
  if (handing) {
    if (logged.duplicate) handoff.to.release(matches.length);
    else handoff.to.put(matches.map((match) => ({ row: match, event: row })));
  }
  return logged;
}

export interface RoutedAgain {
  /** The match rows written, waiting for the policy stage now. */
  matches: MatchRow[];
  /** Subscriptions the event matches that were left out: their match of it is still in progress. */
  inProgress: string[];
}

/** Routes a logged event again; undefined when there is no such event in the log. */
export async function routeAgain(
  database: DatabaseHandle,
  matcher: LiveMatcher,
  eventUuid: string,
  clock: Clock,
): Promise<RoutedAgain | undefined> {
  return database.write(async (tx) => {
    const event = (await eventsByUuid(tx, [eventUuid])).get(eventUuid);
    if (event === undefined) return undefined;
    // Its pending match will deliver it anyway: another would only deliver it twice.
    const unfinished = await subscriptionsWithUnfinishedMatch(tx, eventUuid);
    const document = JSON.parse(event.body) as JsonValue;
    const matched =
      event.source === OPERATIONAL_SOURCE
        ? await operationalMatchesAgain(tx, matcher, eventUuid, document, clock())
        : newMatches(matcher, eventUuid, document, clock());
    const matches = matched.filter((row) => !unfinished.has(row.subscription_uuid));
    await insertMatches(tx, matches);
    // Routed again from the CLI, or by another instance: runners waiting idle anywhere claim them now.
    if (matches.length > 0 && database.capabilities.notify) await queueNotification().execute(tx);
    return { matches, inProgress: matched.filter((row) => unfinished.has(row.subscription_uuid)).map((row) => row.subscription_uuid) };
  });
}

/** The CloudEvents distributed tracing extension's attributes (0.1 keeps extensions in a bag of their own). */
function tracingExtension(event: ReceivedEvent): { traceparent: unknown; tracestate: unknown } {
  const { document } = event;
  const holder = event.specVersion === '0.1' && isJsonObject(document) ? document.extensions : document;
  return isJsonObject(holder)
    ? { traceparent: holder.traceparent, tracestate: holder.tracestate }
    : { traceparent: undefined, tracestate: undefined };
}

/** One match row per live subscription the document matches, waiting for the policy stage now. */
function newMatches(matcher: LiveMatcher, eventUuid: string, document: JsonValue, now: number): MatchRow[] {
  return matcher.match(document).map((subscription) => pendingMatch(eventUuid, subscription, now));
}
