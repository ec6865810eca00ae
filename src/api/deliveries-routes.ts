/**
 * `GET /eventmatch/{uuid}/deliveries`: what became of the events a subscription matched, for
 * its owner: each match (ELM) newest first, with its policy and target codes, its state, and
 * every attempt (policy calls that got no decision, and tries at the target), oldest first.
 *
 * The same identity and 404 rules as `GET /eventmatch/{uuid}` with one difference: a deleted
 * subscription's history stays readable by its owner, because the event log keeps it and
 * "what happened to my last deliveries?" is asked after a delete too. Anyone else gets the
 * same 404 as for a missing uuid.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DatabaseHandle } from '../db/connect.js';
import { attemptsOfMatches, findOwnedSubscriptionUuid, recentMatches, type DeliveryAttempt, type DeliveryMatch } from '../db/deliveries.js';
import { subscriptionNotFound } from '../errors.js';
import { parsePage } from '../subscriptions/input.js';
import { canonicalUuid } from '../uuid.js';
import { EVERY_ROUTE, eventmatchErrors, identityHeaders, pageQuerystring, timestamp, uuidParams } from './eventmatch-schemas.js';
import { formatTimestamp } from '../time/clock.js';
import { actingUser, type IdentityOptions } from './identity.js';

export interface DeliveriesDependencies {
  database: DatabaseHandle;
  identity: IdentityOptions;
}

/** Each match carries its attempts (up to the retry schedule's length, plus policy retries). */
const DELIVERIES_PAGE = { default: 50, max: 200 };

export interface DeliveryRecord {
  elm: string;
  event: { uuid: string; id: string; type: string; source: string };
  created: string;
  state: DeliveryMatch['state'];
  policy: number | null;
  target: number | null;
  attempts: Array<{ at: string; stage: DeliveryAttempt['stage']; status: number | null; error: string | null; duration_ms: number }>;
}

export function deliveriesRoutes(deps: DeliveriesDependencies) {
  return (app: FastifyInstance) => {
    const schema = deliveriesSchema(deps.identity.header);
    const user = (request: FastifyRequest) => actingUser(request, deps.identity);
    // Who is asking is settled first: 401 before any 400 or 404.
    const onRequest = async (request: FastifyRequest) => void user(request);

    app.get<{ Params: { uuid: string }; Querystring: Record<string, string> }>(
      '/eventmatch/:uuid/deliveries',
      { schema, onRequest },
      async (request): Promise<DeliveryRecord[]> => {
        const page = parsePage(request.query, DELIVERIES_PAGE);
        const { db } = deps.database;
        const key = canonicalUuid(request.params.uuid);
        const subscription = key === undefined ? undefined : await findOwnedSubscriptionUuid(db, user(request), key);
        if (subscription === undefined) throw subscriptionNotFound(request.params.uuid);
        const matches = await recentMatches(db, subscription, page);
        const attempts = await attemptsOfMatches(db, matches.map((m) => m.uuid));
        return toDeliveryRecords(matches, attempts);
      },
    );
  };
}

function toDeliveryRecords(matches: readonly DeliveryMatch[], attempts: readonly DeliveryAttempt[]): DeliveryRecord[] {
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


const attempt = {
  type: 'object',
  properties: {
    at: { ...timestamp, description: 'when the answer (or the failure) came; UTC, YYYY-MM-DDTHH:MM:SS.ffffff' },
    stage: { type: 'string', enum: ['policy', 'deliver'], description: 'a policy call that got no decision, or a try at the target' },
    status: { type: ['integer', 'null'], description: 'the HTTP status answered; null when no answer came' },
    error: { type: ['string', 'null'], description: 'what went wrong without (or while reading) an answer, e.g. a time-out' },
    duration_ms: { type: 'integer' },
  },
  required: ['at', 'stage', 'status', 'error', 'duration_ms'],
} as const;

const deliveryRecord = {
  type: 'object',
  properties: {
    elm: { type: 'string', format: 'uuid', description: 'the match (event log match) uuid' },
    event: {
      type: 'object',
      properties: {
        uuid: { type: 'string', format: 'uuid', description: 'the event log uuid' },
        id: { type: 'string', description: 'the CloudEvent id' },
        type: { type: 'string' },
        source: { type: 'string' },
      },
      required: ['uuid', 'id', 'type', 'source'],
    },
    created: { ...timestamp, description: 'when the event matched; UTC, YYYY-MM-DDTHH:MM:SS.ffffff' },
    state: {
      type: 'string',
      enum: ['policy', 'deliver', 'delivered', 'denied', 'failed', 'cancelled'],
      description: 'policy: waiting for the policy decision; deliver: waiting for (or retrying) delivery; then delivered, denied, failed or cancelled',
    },
    policy: { type: ['integer', 'null'], description: "the policy service's HTTP status (200 in allow-all mode); null until decided" },
    target: { type: ['integer', 'null'], description: "the target's latest HTTP status; null until there is one" },
    attempts: { type: 'array', items: attempt, description: 'oldest first' },
  },
  required: ['elm', 'event', 'created', 'state', 'policy', 'target', 'attempts'],
} as const;

function deliveriesSchema(userHeader: string) {
  return {
    tags: ['subscriptions'],
    summary: "A subscription's recent matches and their delivery attempts, newest first",
    description:
      'Owner only. Missing, malformed or another user’s subscription: 404. A deleted subscription’s history stays readable by its owner.',
    headers: identityHeaders(userHeader),
    params: uuidParams,
    querystring: pageQuerystring(DELIVERIES_PAGE),
    response: { 200: { type: 'array', items: deliveryRecord }, ...eventmatchErrors(...EVERY_ROUTE, 'QUERY_PARAMETER_INVALID', 'SUBSCRIPTION_NOT_FOUND') },
  };
}
