/**
 * The delivery stage: due "deliver" rows are claimed and POSTed to their subscription's
 * target in structured mode, with its extensions and credentials. Every attempt is recorded.
 * A 2xx delivers; a retryable failure waits its turn on the schedule (or what Retry-After
 * asks); a permanent failure, or the end of the schedule, fails the row and disables the
 * subscription with what the target said, cancelling its other pending deliveries.
 * Rows of deleted or disabled subscriptions are cancelled instead of sent. A row whose target
 * had no free connection in time for it to finish within its lease goes back to the queue
 * untried: no attempt is recorded or counted.
 */
import type { ReceivedEvent } from '../cloudevents/index.js';
import { withExtensions } from '../cloudevents/index.js';
import { eventsByUuid, type EventRow } from '../db/events.js';
import { cancelPendingMatches, claimDueMatches, recordAttempts, settleEach, type AttemptRecord, type Lease, type MatchChange } from '../db/matches.js';
import { disableSubscription, subscriptionsByUuid, type SubscriptionChange, type SubscriptionRow } from '../db/subscriptions.js';
import type { MatchesTable } from '../db/tables.js';
import { classifyNoAnswer, classifyResponse } from '../delivery/outcome.js';
import { nextDelayMs } from '../delivery/retry-schedule.js';
import type { TargetClient, TargetRequest, TargetResponse } from '../delivery/target-client.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Extensions } from '../subscriptions/input.js';
import { openAuth } from '../subscriptions/secret-box.js';
import type { ClaimPacer } from './claim-pacer.js';
import type { Handoff } from './handoff.js';
import { nextBatch } from './next-batch.js';
import type { StageDependencies } from './policy-stage.js';

/** What the subscription's `error` field keeps of a target's answer. */
const ERROR_LIMIT = 1024;
/**
 * Lease time kept back for settling the batch after its last exchange, so that the rows are
 * still ours when it commits (a settlement takes milliseconds; a slow commit, more). Small, as
 * it is all the wait for a connection that a lease barely longer than the time-out allows.
 */
const SETTLE_MARGIN_MS = 500;
/**
 * A row whose target stayed busy goes back to the queue untried, due this much later: behind
 * the rows due now, and not claimed again at once while the target is still busy.
 */
const BUSY_DELAY_US = 1_000_000;

export interface DeliveryStageDependencies extends StageDependencies {
  target: Pick<TargetClient, 'post'>;
  secretKey: Buffer | null;
  /** A subscription was disabled: the matcher must stop matching it. */
  onSubscriptionChange: (change: SubscriptionChange) => void;
  /** Rows handed over by the policy stage: taken before claiming. */
  inbox?: Handoff;
  /** Spaces out claims that find nothing; without it every step may claim. */
  pacer?: ClaimPacer;
}

type Outcome =
  | { row: MatchesTable; kind: 'cancelled' }
  | { row: MatchesTable; kind: 'busy' }
  | { row: MatchesTable; kind: 'sent'; subscription: SubscriptionRow; status: number | null; error: string | null; durationMs: number; retryAfterMs?: number; permanent: boolean; bodyExcerpt: string; at: number };

export function deliveryStep(deps: DeliveryStageDependencies): () => Promise<number> {
  return async () => {
    const now = deps.clock();
    const lease = { holder: deps.holder, now, durationUs: deps.leaseUs };
    const { handed, claimed } = await nextBatch(deps, now, (limit) => claim(deps, lease, limit));
    const rows = [...handed.map((h) => h.row), ...claimed];
    if (rows.length === 0) return 0;
    const [claimedEvents, subscriptions] = await Promise.all([
      claimed.length > 0 ? eventsByUuid(deps.database.db, claimed.map((r) => r.event_uuid)) : new Map<string, EventRow>(),
      subscriptionsByUuid(deps.database.db, rows.map((r) => r.subscription_uuid)),
    ]);
    const events = new Map(handed.map((h) => [h.row.event_uuid, h.event]));
    for (const [uuid, event] of claimedEvents) events.set(uuid, event);
    const bodies = new BodyCache();
    const outcomes = await Promise.all(rows.map((row) => send(deps, bodies, row, events.get(row.event_uuid), subscriptions.get(row.subscription_uuid))));
    // Reported once the transaction has committed.
    const settled: Array<Parameters<Metrics['deliverySettled']>> = [];
    const disabled = await deps.database.write(async (tx) => {
      const settledAt = deps.clock();
      const attempts: AttemptRecord[] = [];
      const settlements: Array<{ uuid: string; change: MatchChange }> = [];
      const givenUp: Array<{ subscription: string; reason: string; at: number }> = [];
      for (const outcome of outcomes) {
        const { row } = outcome;
        if (outcome.kind === 'cancelled') {
          settlements.push({ uuid: row.uuid, change: { state: 'cancelled' } });
          settled.push(['cancelled']);
          continue;
        }
        if (outcome.kind === 'busy') {
          settlements.push({ uuid: row.uuid, change: { state: 'deliver', due: settledAt + BUSY_DELAY_US } });
          continue;
        }
        const { at, status } = outcome;
        // The ELM target code is the latest HTTP status: an attempt without one leaves it be.
        const targetCode = status ?? undefined;
        attempts.push({ matchUuid: row.uuid, stage: 'deliver', at, status, error: outcome.error, durationMs: outcome.durationMs });
        const verdict = status === null ? classifyNoAnswer(outcome.error ?? 'no answer', outcome.permanent) : classifyResponse(status, outcome.retryAfterMs, outcome.bodyExcerpt);
        if (verdict.kind === 'delivered') {
          settlements.push({ uuid: row.uuid, change: { state: 'delivered', targetCode, attempts: 'count' } });
          settled.push(['delivered', outcome.durationMs / 1000, (at - row.created) / 1e6]);
          continue;
        }
        const delayMs = verdict.kind === 'retry' ? nextDelayMs(row.attempts + 1, deps.retryDelaysMs, deps.random, verdict.retryAfterMs) : undefined;
        if (delayMs !== undefined) {
          settlements.push({ uuid: row.uuid, change: { state: 'deliver', due: at + delayMs * 1000, targetCode, attempts: 'count' } });
          settled.push(['retry', outcome.durationMs / 1000]);
          continue;
        }
        settlements.push({ uuid: row.uuid, change: { state: 'failed', targetCode, attempts: 'count' } });
        settled.push(['failed', outcome.durationMs / 1000]);
        const reason = verdict.kind === 'retry' ? `gave up after ${row.attempts + 1} attempts: ${verdict.reason}` : verdict.reason;
        givenUp.push({ subscription: row.subscription_uuid, reason: reason.slice(0, ERROR_LIMIT), at });
      }
      // Every row of the batch is settled before any subscription is disabled: disabling
      // cancels the subscription's pending rows, which must not include rows of this batch.
      await settleEach(tx, deps.holder, settlements, settledAt);
      await recordAttempts(tx, deps.database.capabilities, attempts);
      const newlyDisabled: SubscriptionRow[] = [];
      for (const { subscription: uuid, reason, at } of givenUp) {
        const subscription = await disableSubscription(tx, uuid, reason, at, deps.database.capabilities);
        if (subscription) {
          await cancelPendingMatches(tx, subscription.uuid, at);
          newlyDisabled.push(subscription);
        }
      }
      return newlyDisabled;
    });
    for (const args of settled) deps.metrics?.deliverySettled(...args);
    for (const row of disabled) deps.onSubscriptionChange({ kind: 'upsert', row });
    return rows.length;
  };
}

function claim(deps: DeliveryStageDependencies, lease: Lease, limit: number): Promise<MatchesTable[]> {
  // A claim is a write: it shares a commit with the writes of the moment rather than pay its own.
  return deps.database.write((tx) => claimDueMatches(tx, deps.database.capabilities, 'deliver', lease, limit));
}

/** Never rejects: whatever goes wrong with one row is that row's outcome, not the batch's. */
async function send(deps: DeliveryStageDependencies, bodies: BodyCache, row: MatchesTable, event: EventRow | undefined, subscription: SubscriptionRow | undefined): Promise<Outcome> {
  if (!event || !subscription || subscription.deleted !== null || subscription.disabled !== null) return { row, kind: 'cancelled' };
  let request: TargetRequest;
  try {
    request = {
      url: subscription.target_url,
      auth: openAuth(subscription.auth, deps.secretKey),
      body: bodies.body(event, subscription.extensions),
      ...(row.locked_until === null ? {} : { endWithinMs: (row.locked_until - deps.clock()) / 1000 - SETTLE_MARGIN_MS }),
    };
  } catch (error) {
    // The stored row cannot be sent as it is (credentials sealed with a key this instance does
    // not have): trying again would fail the same way, so it is a permanent failure.
    return { row, kind: 'sent', subscription, ...notSent(error, true), at: deps.clock() };
  }
  try {
    const response = await deps.target.post(request);
    return response.busy ? { row, kind: 'busy' } : { row, kind: 'sent', subscription, ...response, at: deps.clock() };
  } catch (error) {
    // post() reports network problems as answers; anything it throws is retried like them.
    return { row, kind: 'sent', subscription, ...notSent(error, false), at: deps.clock() };
  }
}

function notSent(error: unknown, permanent: boolean): TargetResponse {
  return { status: null, error: `not sent: ${error instanceof Error ? error.message : String(error)}`, permanent, durationMs: 0, bodyExcerpt: '' };
}

/** The body sent for an event with a subscription's extensions, made once per batch for all the rows that share them. */
class BodyCache {
  private readonly bodies = new Map<string, string>();

  body(event: EventRow, extensions: string): string {
    const key = `${event.uuid}\u0000${extensions}`;
    let body = this.bodies.get(key);
    if (body === undefined) {
      const received: ReceivedEvent = {
        specVersion: event.spec_version as ReceivedEvent['specVersion'],
        id: event.event_id,
        source: event.source,
        type: event.type,
        document: JSON.parse(event.body) as ReceivedEvent['document'],
      };
      body = JSON.stringify(withExtensions(received, JSON.parse(extensions) as Extensions));
      this.bodies.set(key, body);
    }
    return body;
  }
}
