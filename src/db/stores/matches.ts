/**
 * The matches table (the event log's ELM records, and the work queue).
 */
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { timeOrderedUuid } from '../../uuid.js';
import { chunks } from '../chunks.js';
import type { Capabilities, DatabaseHandle } from '../connect.js';
import { queueNotification } from '../subscription-notifications.js';
import { type AttemptsTable, type Database, type MatchesTable, type MatchState, OPEN_STATES, UNFINISHED_STATES } from '../tables.js';

/**
 * A deleted or disabled subscription's matches still waiting for the policy or delivery, or
 * readable by a pull reader that has not read them, are cancelled, those in flight included. A live lease is left to its holder: told of the change,
 * it cancels what it still holds, and what it sent meanwhile is recorded as it turned out (see
 * settleMatches). An expired one is released.
 */
export async function cancelPendingMatches(db: Kysely<Database>, subscriptionUuid: string, at: number): Promise<number> {
  const result = await db
    .updateTable('matches')
    .set((eb) => ({
      state: 'cancelled',
      updated: at,
      locked_by: eb.case().when('locked_until', '<', at).then(null).else(eb.ref('locked_by')).end(),
      locked_until: eb.case().when('locked_until', '<', at).then(null).else(eb.ref('locked_until')).end(),
    }))
    .where('subscription_uuid', '=', subscriptionUuid)
    .where('state', 'in', [...OPEN_STATES])
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export type Stage = 'policy' | 'deliver';

export interface Lease {
  /** Who holds the claim: one worker of one instance. */
  holder: string;
  now: number;
  durationUs: number;
}

/**
 * Which rows a claim may take, besides being due: a runner leaves out the work it already has
 * enough of (a target origin or a user whose share is full), or asks for one kind only (a
 * probe of a target that stopped answering).
 */
export interface ClaimFilter {
  excludeSubscriptions?: readonly string[];
  excludeOwners?: readonly string[];
  onlySubscriptions?: readonly string[];
  /** Rows whose outcome the claiming instance has yet to write (runners/settler.ts), whatever their leases say. */
  excludeMatches?: readonly string[];
}

/**
 * Claims up to `limit` due rows of a stage whose lease is free or expired, oldest due first,
 * and returns them. On PostgreSQL, rows another instance is claiming are skipped (`SKIP
 * LOCKED`), so instances never take the same row; SQLite has one writer and needs no lock.
 */
export async function claimDueMatches(
  db: Kysely<Database>,
  capabilities: Capabilities,
  stage: Stage,
  lease: Lease,
  limit: number,
  filter: ClaimFilter = {},
): Promise<MatchesTable[]> {
  let due = db
    .selectFrom('matches')
    .select('uuid')
    .where('state', '=', stage)
    .where('due', '<=', lease.now)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', lease.now)]))
    .orderBy('due')
    .limit(limit);
  if (filter.excludeSubscriptions?.length) due = due.where('subscription_uuid', 'not in', [...filter.excludeSubscriptions]);
  if (filter.excludeOwners?.length) due = due.where('owner', 'not in', [...filter.excludeOwners]);
  if (filter.excludeMatches?.length) due = due.where('uuid', 'not in', [...filter.excludeMatches]);
  if (filter.onlySubscriptions) {
    if (filter.onlySubscriptions.length === 0) return [];
    due = due.where('subscription_uuid', 'in', [...filter.onlySubscriptions]);
  }
  if (capabilities.skipLocked) due = due.forUpdate().skipLocked();
  const claimed = await db
    .updateTable('matches')
    .set({ locked_until: lease.now + lease.durationUs, locked_by: lease.holder })
    .where('uuid', 'in', due)
    // Checked again on the row itself: another claim may have taken it since the subquery read it.
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', lease.now)]))
    .returningAll()
    .execute();
  // RETURNING does not keep the subquery's order.
  return claimed.sort((a, b) => a.due - b.due);
}

export interface MatchChange {
  state: MatchState;
  due?: number;
  policyCode?: number | null;
  targetCode?: number | null;
  /** `first`: the first try after the allowance (a row whose allowance is written with it). */
  attempts?: 'count' | 'reset' | 'first';
}

/**
 * Moves claimed rows on: to a new state, or back to the same one due later, and releases their
 * lease. Returns the uuids of the rows settled: not those whose lease another holder has taken,
 * nor those deleted meanwhile (their event purged). A row cancelled while it was in flight
 * takes an outcome (it was delivered, or failed for good), but never goes back to the queue.
 */
export async function settleMatches(
  db: Kysely<Database>,
  uuids: readonly string[],
  holder: string,
  change: MatchChange,
  at: number,
): Promise<string[]> {
  if (uuids.length === 0) return [];
  return (await settleStatement(db, uuids, holder, change, at).execute()).map((r) => r.uuid);
}

/** settleMatches' statement, for `uuids` (not empty): it returns the uuids it settled. */
export function settleStatement(db: Kysely<Database>, uuids: readonly string[], holder: string, change: MatchChange, at: number) {
  const rows = db
    .updateTable('matches')
    .set((eb) => ({
      state: change.state,
      locked_until: null,
      locked_by: null,
      updated: at,
      ...(change.due !== undefined ? { due: change.due } : {}),
      ...(change.policyCode !== undefined ? { policy_code: change.policyCode } : {}),
      ...(change.targetCode !== undefined ? { target_code: change.targetCode } : {}),
      ...(change.attempts === 'count' ? { attempts: eb('attempts', '+', 1) } : {}),
      ...(change.attempts === 'reset' ? { attempts: 0 } : {}),
      ...(change.attempts === 'first' ? { attempts: 1 } : {}),
    }))
    .where('uuid', 'in', [...uuids])
    // A lease that expired and was taken by someone else is theirs now.
    .where('locked_by', '=', holder)
    .returning('uuid');
  return OPEN_STATES.includes(change.state) ? rows.where('state', '!=', 'cancelled') : rows;
}

/**
 * Settles claimed rows each with its own change, in one statement per distinct change: a
 * stage's batch is mostly "delivered, 200" or "allowed, 200", so it costs one or two.
 */
export async function settleEach(
  db: Kysely<Database>,
  holder: string,
  settlements: ReadonlyArray<{ uuid: string; change: MatchChange }>,
  at: number,
): Promise<Set<string>> {
  const settled = new Set<string>();
  for (const { change, uuids } of byChange(settlements)) {
    for (const uuid of await settleMatches(db, uuids, holder, change, at)) settled.add(uuid);
  }
  return settled;
}

/** The rows of `settlements` grouped by their change, each group's uuids in the order given. */
export function byChange(
  settlements: ReadonlyArray<{ uuid: string; change: MatchChange }>,
): Array<{ change: MatchChange; uuids: string[] }> {
  const groups = new Map<string, { change: MatchChange; uuids: string[] }>();
  for (const { uuid, change } of settlements) {
    const key = JSON.stringify(change);
    const group = groups.get(key);
    if (group) group.uuids.push(uuid);
    else groups.set(key, { change, uuids: [uuid] });
  }
  return [...groups.values()];
}

export interface AttemptRecord {
  matchUuid: string;
  stage: AttemptsTable['stage'];
  at: number;
  status: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * Records attempts, of the matches that still exist: a match can vanish while its delivery is
 * in flight (`eventpurge` deletes its event, cascading), and one missing row must not fail the
 * whole batch's settlement with a foreign key violation. One statement inserts them and leaves
 * out those of missing matches; on PostgreSQL the matches kept are locked until the commit, so
 * a purge cannot delete them in between. Returns how many were recorded.
 */
export async function recordAttempts(
  db: Kysely<Database>,
  capabilities: Capabilities,
  attempts: readonly AttemptRecord[],
): Promise<number> {
  let recorded = 0;
  for (const statement of attemptStatements(capabilities, attempts))
    recorded += Number((await statement.execute(db)).numAffectedRows ?? 0n);
  return recorded;
}

/** recordAttempts' statements: none for no attempts. */
export function attemptStatements(capabilities: Capabilities, attempts: readonly AttemptRecord[]) {
  return chunks(attempts, ATTEMPT_ROWS_PER_STATEMENT).map((chunk) => {
    const rows = chunk.map(
      (a) => sql`(${timeOrderedUuid()}, ${a.matchUuid}, ${a.stage}, ${a.at}, ${a.status}, ${a.error}, ${Math.round(a.durationMs)})`,
    );
    const matchUuids = [...new Set(chunk.map((a) => a.matchUuid))].map((uuid) => sql`${uuid}`);
    // A VALUES list's columns are column1… on both databases; PostgreSQL reads its parameters as text.
    return sql`insert into attempts (uuid, match_uuid, stage, at, status, error, duration_ms)
      select column1, column2, column3, cast(column4 as bigint), cast(column5 as integer), column6, cast(column7 as integer)
      from (values ${sql.join(rows)}) as recorded
      where column2 in (select uuid from matches where uuid in (${sql.join(matchUuids)})${capabilities.rowLocks ? sql` for key share` : sql``})`;
  });
}

/** Both databases take at least 32,766 parameters a statement: 7 an attempt, and its match's uuid. */
const ATTEMPT_ROWS_PER_STATEMENT = 4_000;

export type RequeueResult = 'requeued' | 'leased' | 'missing';

/**
 * Queues one match of `subscriptionUuid` again, whatever its state: back to the policy check,
 * due now, its retry count started afresh (its attempts stay recorded). A row under a live
 * lease is left to its holder ('leased'): changing it under a delivery in flight could send it
 * twice, and the holder's settlement would overwrite the change. An expired lease is dropped,
 * so a late settlement by its old holder changes nothing.
 */
export async function requeueMatch(db: Kysely<Database>, subscriptionUuid: string, matchUuid: string, at: number): Promise<RequeueResult> {
  const requeued = await requeue(db, at).where('uuid', '=', matchUuid).where('subscription_uuid', '=', subscriptionUuid).executeTakeFirst();
  if (Number(requeued.numUpdatedRows) > 0) return 'requeued';
  const present = await db
    .selectFrom('matches')
    .select('uuid')
    .where('uuid', '=', matchUuid)
    .where('subscription_uuid', '=', subscriptionUuid)
    .executeTakeFirst();
  return present === undefined ? 'missing' : 'leased';
}

/** The states a recover takes back: what failed for good, and what a disable cancelled. */
export const RECOVERABLE_STATES: readonly MatchState[] = ['failed', 'cancelled'];

/** Both bounds included, in µs; no `until`: up to now. */
export interface CreatedWindow {
  since: number;
  until?: number;
}

/**
 * How many matches of `subscriptionUuid` requeueRecoverable would queue again at `at`: those in
 * a recoverable state created within `window`, no live lease holding them.
 */
export async function countRecoverable(db: Kysely<Database>, subscriptionUuid: string, window: CreatedWindow, at: number): Promise<number> {
  const row = await db
    .selectFrom('matches')
    .select((eb) => eb.fn.countAll().as('count'))
    .where((eb) => eb.and([recoverable(eb, subscriptionUuid, window), leaseFree(eb, at)]))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/**
 * Queues again, as requeueMatch does one, every match countRecoverable counts. One statement
 * whatever the window, over the index of a subscription's matches by creation: no list of uuids
 * goes back and forth. Returns how many were queued.
 */
export async function requeueRecoverable(
  db: Kysely<Database>,
  subscriptionUuid: string,
  window: CreatedWindow,
  at: number,
): Promise<number> {
  const result = await requeue(db, at)
    .where((eb) => recoverable(eb, subscriptionUuid, window))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** In a recoverable state, of the subscription, created within the window. */
function recoverable(eb: ExpressionBuilder<Database, 'matches'>, subscriptionUuid: string, window: CreatedWindow) {
  return eb.and([
    eb('subscription_uuid', '=', subscriptionUuid),
    eb('created', '>=', window.since),
    ...(window.until === undefined ? [] : [eb('created', '<=', window.until)]),
    eb('state', 'in', [...RECOVERABLE_STATES]),
  ]);
}

/** No live lease: none at all, or one that ran out before `at`. */
function leaseFree(eb: ExpressionBuilder<Database, 'matches'>, at: number) {
  return eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', at)]);
}

/**
 * Rows back to the policy check, due `at`, their retry count started afresh (their attempts stay
 * recorded), if no live lease holds them; an expired lease is dropped, so that a late
 * settlement by its old holder changes nothing.
 */
function requeue(db: Kysely<Database>, at: number) {
  return db
    .updateTable('matches')
    .set({ state: 'policy', due: at, attempts: 0, locked_until: null, locked_by: null, updated: at })
    .where((eb) => leaseFree(eb, at));
}

/**
 * Gives leased rows back untried: their place in the queue (`due`) and their attempts stay as
 * they were, so they are claimed again in their turn.
 */
export async function releaseMatches(db: Kysely<Database>, holder: string, uuids: readonly string[]): Promise<void> {
  if (uuids.length === 0) return;
  await releaseStatement(db, holder, uuids).execute();
}

/** releaseMatches' statement, for `uuids` (not empty). */
export function releaseStatement(db: Kysely<Database>, holder: string, uuids: readonly string[]) {
  return db
    .updateTable('matches')
    .set({ locked_until: null, locked_by: null })
    .where('uuid', 'in', [...uuids])
    .where('locked_by', '=', holder);
}

/**
 * Runs on to `until` the leases `holder` still has on `uuids`, whether or not they have run out
 * meanwhile: not those of rows another holder has taken since, nor of rows no runner waits on
 * any more (settled, cancelled). For rows whose outcome is not written yet (runners/settler.ts).
 * Returns how many were extended.
 */
export async function extendLeases(db: Kysely<Database>, holder: string, uuids: readonly string[], until: number): Promise<number> {
  let extended = 0;
  for (const chunk of chunks(uuids, LEASES_PER_STATEMENT)) {
    const result = await db
      .updateTable('matches')
      .set({ locked_until: until })
      .where('uuid', 'in', chunk)
      .where('locked_by', '=', holder)
      .where('state', 'in', [...UNFINISHED_STATES])
      .executeTakeFirst();
    extended += Number(result.numUpdatedRows);
  }
  return extended;
}

const LEASES_PER_STATEMENT = 10_000;

/**
 * Returns the rows `holder` leased to the queue: at shutdown, once its stages have stopped,
 * for the rows still waiting in memory (runners/handoff.ts), so that others need not wait
 * for the leases to run out.
 */
export async function releaseLeasesOf(database: DatabaseHandle, holder: string): Promise<number> {
  const result = await database.db
    .updateTable('matches')
    .set({ locked_until: null, locked_by: null })
    .where('locked_by', '=', holder)
    .executeTakeFirst();
  const released = Number(result.numUpdatedRows);
  // Committed: the other instances' runners, which may be waiting idle, claim these now.
  if (released > 0 && database.capabilities.notify) await queueNotification().execute(database.db);
  return released;
}

/**
 * Returns every claimed row to the queue. Only for a database one instance owns (SQLite): at
 * start-up, any lease in it belonged to this instance's previous life, which is over.
 */
export async function releaseAllLeases(db: Kysely<Database>): Promise<number> {
  const result = await db
    .updateTable('matches')
    .set({ locked_until: null, locked_by: null })
    .where('locked_by', 'is not', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
