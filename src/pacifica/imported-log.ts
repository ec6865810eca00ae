/**
 * The original's event log as rows of this service's: each event with its text, uuid and time,
 * and each match (ELM) with its uuid, subscription, time and result codes. It is history: every
 * match comes over finished (delivered, denied or failed, as its codes say), so nothing is
 * queued, and the event is never matched again.
 */
import type { EventsTable, MatchesTable, MatchState } from '../db/tables.js';
import type { ZonedTimes } from '../time/zoned-time.js';
import type { OriginalEvent, OriginalMatch } from './original-database.js';
import { statusOf, uuidOf } from './original-values.js';

const SPEC_VERSIONS = new Set(['1.0', '0.3', '0.1']);

/** The event, or why the original's row cannot be read. */
export function importedEvent(original: OriginalEvent, times: ZonedTimes): EventsTable | { unreadable: string } {
  const uuid = uuidOf(original.uuid);
  if (uuid === undefined) return { unreadable: `uuid ${JSON.stringify(original.uuid)} is not a uuid` };
  const received = times.micros(original.created);
  if (received === undefined) return { unreadable: `created ${JSON.stringify(original.created)} is not a date and time` };
  let document: unknown;
  try {
    document = JSON.parse(original.jsondata ?? '');
  } catch {
    // The original stored whatever JSON it was sent, and Python writes NaN and Infinity, which JSON has not.
    return { unreadable: 'its jsondata is not JSON' };
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document))
    return { unreadable: 'its jsondata is not a JSON object, so not an event' };
  const event = document as Record<string, unknown>;
  // The legacy 0.1 shape (cloudEventsVersion, eventID, eventType) beside 1.0 and 0.3; the original took anything.
  const legacy = event.cloudEventsVersion !== undefined && event.specversion === undefined;
  const specVersion = legacy
    ? '0.1'
    : typeof event.specversion === 'string' && SPEC_VERSIONS.has(event.specversion)
      ? event.specversion
      : '';
  const id = attribute(legacy ? event.eventID : event.id);
  return {
    uuid,
    source: attribute(event.source) ?? '',
    // An event without an id is unique by its uuid: nothing later is its duplicate.
    event_id: id ?? uuid,
    type: attribute(legacy ? event.eventType : event.type) ?? '',
    spec_version: specVersion,
    body: original.jsondata!,
    received,
    traceparent: null,
  };
}

function attribute(value: unknown): string | undefined {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

/** The subscriptions matches may refer to: each one's owner, by uuid. */
export type ImportedOwners = ReadonlyMap<string, string>;

/** The match, or why it cannot come over. */
export function importedMatch(original: OriginalMatch, times: ZonedTimes, owners: ImportedOwners): MatchesTable | { unreadable: string } {
  const uuid = uuidOf(original.uuid);
  if (uuid === undefined) return { unreadable: `uuid ${JSON.stringify(original.uuid)} is not a uuid` };
  const event = uuidOf(original.event)!;
  const subscription = uuidOf(original.subscription);
  const owner = subscription === undefined ? undefined : owners.get(subscription);
  if (subscription === undefined || owner === undefined)
    return {
      unreadable: `its subscription ${subscription ?? String(original.subscription)} did not come over (see the subscriptions above)`,
    };
  const created = times.micros(original.created);
  if (created === undefined) return { unreadable: `created ${JSON.stringify(original.created)} is not a date and time` };
  const policy = statusOf(original.policy);
  const target = statusOf(original.target);
  return {
    uuid,
    event_uuid: event,
    subscription_uuid: subscription,
    owner,
    state: stateOf(policy, target),
    policy_code: policy,
    target_code: target,
    created,
    due: created,
    locked_until: null,
    locked_by: null,
    attempts: 0,
    updated: created,
    cursor: null,
  };
}

/**
 * What the codes say of how it ended: the target took it; the policy denied it; otherwise it
 * was not delivered (a policy error, a target that refused, or no answer: the original disabled
 * the subscription for each).
 */
function stateOf(policy: number | null, target: number | null): MatchState {
  if (target !== null && target >= 200 && target < 300) return 'delivered';
  if (target === null && policy !== null && policy >= 400 && policy < 500) return 'denied';
  return 'failed';
}

/** `changed`: sent again here since it was imported (a retry moves `updated`). */
export function compareMatch(here: MatchesTable, imported: MatchesTable): 'present' | 'changed' | { conflict: string } {
  const differ: string[] = [];
  for (const field of ['event_uuid', 'subscription_uuid', 'created'] as const) if (here[field] !== imported[field]) differ.push(field);
  if (differ.length > 0) return { conflict: `differs in ${differ.join(', ')}` };
  if (here.updated > imported.updated) return 'changed';
  for (const field of ['policy_code', 'target_code', 'state'] as const) if (here[field] !== imported[field]) differ.push(field);
  return differ.length === 0 ? 'present' : { conflict: `differs in ${differ.join(', ')}` };
}
