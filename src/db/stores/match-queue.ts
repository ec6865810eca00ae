/**
 * The work queue as the policy and delivery runners see it: the match rows, claimed under a
 * lease, settled with what came of them, or given back untried. Every write but a lease's
 * extension goes through the handle's group commit, and what differs between the databases is
 * decided by their capabilities (skip-locked claims, row locks, change notifications), not by
 * the runners.
 */
import type { Kysely } from 'kysely';
import type { Capabilities, DatabaseHandle } from '../connect.js';
import { type EventRow, eventsByUuid } from './events.js';
import { countRuns, endRuns, endRunsStatement, type RunAttempt } from './failure-runs.js';
import {
  type AttemptRecord,
  attemptStatements,
  byChange,
  type ClaimFilter,
  cancelPendingMatches,
  extendLeases,
  type Lease,
  type MatchChange,
  recordAttempts,
  releaseMatches,
  releaseStatement,
  type Stage,
  settleEach,
  settleStatement,
} from './matches.js';
import { inOneRoundTrip } from '../postgres-round-trip.js';
import { makeReadable } from './pull.js';
import { logNotices, type NoticeEvents, type SubscriptionNotice } from './subscription-notices.js';
import { queueNotification } from '../subscription-notifications.js';
import { disableSubscription, subscriptionsByUuid } from './subscriptions.js';
import { type Database, type MatchesTable, OPEN_STATES, type SubscriptionRow } from '../tables.js';

export interface RowChange {
  uuid: string;
  change: MatchChange;
}

/** What came of some claimed rows, recorded in one transaction. */
export interface Settlement {
  changes: readonly RowChange[];
  attempts: readonly AttemptRecord[];
  /**
   * Subscriptions whose target failed for good: disabled, and their rows still waiting
   * cancelled, once the changes above are made (so that none of those rows is cancelled).
   * `tell`: whether its owner is told (not when it failed delivering the service's own event).
   */
  disable: ReadonlyArray<{ subscription: string; reason: string; at: number; tell: boolean }>;
  /** Delivery attempts, in the order they ended, for their subscriptions' runs of failures. */
  runs?: readonly RunAttempt[];
  /** Rows given back untried: their place in the queue and their attempts unchanged. */
  release?: readonly string[];
}

export interface Settled {
  /** The rows changed: not those another holder has taken since, nor those purged meanwhile. */
  rows: Set<string>;
  /** The subscriptions this settlement disabled (not those already disabled or deleted). */
  disabled: SubscriptionRow[];
  /** Match rows of the operational events it wrote, due for delivery now. */
  notified: number;
}

export interface MatchQueue {
  claim(stage: Stage, lease: Lease, limit: number, filter?: ClaimFilter): Promise<MatchesTable[]>;
  settle(holder: string, settlement: Settlement, at: number): Promise<Settled>;
  /** Runs `holder`'s leases of `uuids` on to `until` (µs), those another holder has not taken since; resolves with how many. */
  extendLeases(holder: string, uuids: readonly string[], until: number): Promise<number>;
  events(uuids: readonly string[]): Promise<Map<string, EventRow>>;
  subscriptions(uuids: readonly string[]): Promise<Map<string, SubscriptionRow>>;
}

/** `notices`: the operational events telling owners of what a settlement did; none are written without it. */
export function matchQueue(database: DatabaseHandle, notices?: NoticeEvents): MatchQueue {
  const { capabilities } = database;
  return {
    // A claim is a write: it shares a commit with the writes of the moment rather than pay its
    // own, and being one statement it needs no transaction when it commits alone.
    // Neither is told to anyone outside once committed: they are synced later (WriteOptions).
    claim: (stage, lease, limit, filter) =>
      database.perform('claim', { stage, lease, limit, filter }, { oneStatement: true, mayChangeNothing: true, syncLater: true }),
    settle: (holder, settlement, at) =>
      notices !== undefined && mayTell(settlement)
        ? database.write((tx) => settleClaimed(tx, capabilities, { holder, settlement, at }, notices), { syncLater: true })
        : database.perform(
            'settle',
            { holder, settlement, at },
            { oneStatement: capabilities.roundTrips && isPlain(settlement), syncLater: true },
          ),
    // One statement by itself, outside the group commit: a commit it shared with a settlement
    // the database refuses would fail with it. Not told to the storage watch: that so small a
    // write fits says nothing of room for a settlement.
    extendLeases: (holder, uuids, until) => extendLeases(database.db, holder, uuids, until),
    events: (uuids) => eventsByUuid(database.db, uuids),
    subscriptions: (uuids) => subscriptionsByUuid(database.db, uuids),
  };
}

export interface SettleArgs {
  holder: string;
  settlement: Settlement;
  at: number;
}

/**
 * Whether a settlement may tell an owner something (an operational event): it disables a
 * subscription, or a delivery failed and a run of failures may have grown to the threshold.
 * Only such a settlement needs the subscriptions' matcher, which is on the main thread.
 */
export function mayTell(settlement: Settlement): boolean {
  return settlement.disable.length > 0 || (settlement.runs ?? []).some((run) => run.failed);
}

/**
 * Whether a settlement is plain: it disables nothing, counts no failure into a run, and makes no
 * pull row readable, so none of its statements depends on what an earlier one answered. Most are:
 * a delivery that succeeded, an allowance, a denial, rows given back.
 */
function isPlain(settlement: Settlement): boolean {
  return !mayTell(settlement) && !settlement.changes.some((c) => c.change.state === 'pending');
}

/** Records a settlement in transaction `tx`; `notices` make the operational events it tells of (none without). */
export async function settleClaimed(
  tx: Kysely<Database>,
  capabilities: Capabilities,
  args: SettleArgs,
  notices?: NoticeEvents,
): Promise<Settled> {
  if (capabilities.roundTrips && isPlain(args.settlement)) return settlePlainInOneRoundTrip(tx, capabilities, args);
  const { holder, settlement, at } = args;
  const rows = await settleEach(tx, holder, settlement.changes, at);
  // Pull rows now pending are readable once they have their cursors (pull.ts).
  await makeReadable(
    tx,
    capabilities,
    settlement.changes.filter((c) => c.change.state === 'pending' && rows.has(c.uuid)).map((c) => c.uuid),
  );
  // A row cancelled while in flight does not go back to the queue (settleMatches), but its
  // lease goes all the same.
  const cancelledMeanwhile = settlement.changes.filter((c) => OPEN_STATES.includes(c.change.state) && !rows.has(c.uuid)).map((c) => c.uuid);
  await releaseMatches(tx, holder, [...(settlement.release ?? []), ...cancelledMeanwhile]);
  if (givesBack(capabilities, settlement)) await queueNotification().execute(tx);
  await recordAttempts(tx, capabilities, settlement.attempts);
  const failing = await countRuns(tx, settlement.runs ?? []);
  const disabled: SubscriptionRow[] = [];
  const told: SubscriptionNotice[] = [];
  for (const { subscription, reason, at: when, tell } of settlement.disable) {
    const row = await disableSubscription(tx, capabilities, subscription, reason, when);
    if (row) {
      await cancelPendingMatches(tx, row.uuid, when);
      await endRuns(tx, [row.uuid]);
      disabled.push(row);
      if (tell) told.push({ kind: 'disabled', subscription: row });
    }
  }
  // Failing is told only of a subscription still enabled, and before its being disabled.
  const stillEnabled = await subscriptionsByUuid(
    tx,
    failing.map((run) => run.subscription),
  );
  for (const { subscription, failures, error } of failing) {
    const row = stillEnabled.get(subscription);
    if (row?.disabled === null && row.deleted === null) told.unshift({ kind: 'failing', subscription: row, failures, error });
  }
  const notified = await logNotices(tx, told, notices, at);
  return { rows, disabled, notified };
}

/**
 * Rows given back untried go to the queue for anyone to claim: other instances, whose runners may
 * wait idle, are told on commit (rows moving on to their next stage are this instance's own work).
 */
function givesBack(capabilities: Capabilities, settlement: Settlement): boolean {
  return capabilities.notify && (settlement.release?.length ?? 0) > 0;
}

/**
 * A plain settlement's statements in one round trip (PostgreSQL): one write to the socket instead
 * of one a statement, and, with nothing else in its commit, without BEGIN and COMMIT (see
 * group-commit.ts). A settlement was five round trips (BEGIN, the change, the attempts, the runs
 * ended, COMMIT), and the main thread's socket writes under pg's submit were the largest part
 * of its PostgreSQL work in a profile of the pipeline. The statements run in order: the release,
 * after the changes, finds those of their rows a cancel kept from changing, as settleClaimed's
 * `cancelledMeanwhile` does (a changed row holds no lease any more).
 */
async function settlePlainInOneRoundTrip(
  tx: Kysely<Database>,
  capabilities: Capabilities,
  { holder, settlement, at }: SettleArgs,
): Promise<Settled> {
  const changes = byChange(settlement.changes);
  const reopened = settlement.changes.filter((c) => OPEN_STATES.includes(c.change.state)).map((c) => c.uuid);
  const released = [...(settlement.release ?? []), ...reopened];
  const ended = [...new Set((settlement.runs ?? []).map((run) => run.subscription))];
  const statements = [
    ...changes.map(({ change, uuids }) => settleStatement(tx, uuids, holder, change, at).compile()),
    ...(released.length > 0 ? [releaseStatement(tx, holder, released).compile()] : []),
    ...(givesBack(capabilities, settlement) ? [queueNotification().compile(tx)] : []),
    ...attemptStatements(capabilities, settlement.attempts).map((statement) => statement.compile(tx)),
    ...(ended.length > 0 ? [endRunsStatement(tx, ended).compile()] : []),
  ];
  const answers = statements.length > 0 ? await inOneRoundTrip(tx, statements) : [];
  const rows = new Set(answers.slice(0, changes.length).flatMap((settled) => (settled as Array<{ uuid: string }>).map((row) => row.uuid)));
  return { rows, disabled: [], notified: 0 };
}
