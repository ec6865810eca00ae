/**
 * The writes the service makes most often (logging events, claiming, settling, creating
 * subscriptions), and the largest (a page of an imported log), as data: a name and arguments that can cross to another thread. On SQLite
 * they run in the thread that owns the connection (sqlite-worker.ts), in that thread's group
 * commit, so that the main thread sends one message for a write rather than one for each of its
 * statements, and builds none of them. On PostgreSQL they run in the main thread's group commit.
 */
import type { Kysely } from 'kysely';
import type { Capabilities } from './connect.js';
import { type EventToLog, logEvents, logEventsInOneStatement } from './stores/events.js';
import { type SettleArgs, settleClaimed } from './stores/match-queue.js';
import { type ClaimFilter, claimDueMatches, type Lease, type Stage } from './stores/matches.js';
import { type ImportedLogPage, importedLogPageTransfers, writeImportedLogPage } from './stores/imported-rows.js';
import { insertWithinLimit } from './stores/subscriptions.js';
import type { Database, SubscriptionRow } from './tables.js';

export interface ClaimArgs {
  stage: Stage;
  lease: Lease;
  limit: number;
  filter?: ClaimFilter;
}

export interface CreateArgs {
  rows: readonly SubscriptionRow[];
  /** Each owner's limit of live subscriptions. */
  most: number | 'off';
}

export const OPERATIONS = {
  logEvents: (tx: Kysely<Database>, capabilities: Capabilities, entries: readonly EventToLog[]) =>
    capabilities.dataModifyingWith ? logEventsInOneStatement(tx, entries) : logEvents(tx, entries),
  claim: (tx: Kysely<Database>, capabilities: Capabilities, { stage, lease, limit, filter }: ClaimArgs) =>
    claimDueMatches(tx, capabilities, stage, lease, limit, filter),
  settle: (tx: Kysely<Database>, capabilities: Capabilities, args: SettleArgs) => settleClaimed(tx, capabilities, args),
  createSubscriptions: (tx: Kysely<Database>, capabilities: Capabilities, { rows, most }: CreateArgs) =>
    insertWithinLimit(tx, capabilities, rows, most),
  importLogPage: (tx: Kysely<Database>, capabilities: Capabilities, page: ImportedLogPage) => writeImportedLogPage(tx, capabilities, page),
};

export type OperationName = keyof typeof OPERATIONS;
export type OperationArgs<N extends OperationName> = Parameters<(typeof OPERATIONS)[N]>[2];
export type OperationResult<N extends OperationName> = Awaited<ReturnType<(typeof OPERATIONS)[N]>>;

/** The buffers of an operation's arguments that move to SQLite's thread rather than being copied there. */
const TRANSFERS: { [N in OperationName]?: (args: OperationArgs<N>) => ArrayBuffer[] } = {
  importLogPage: importedLogPageTransfers,
};

export function transfersOf<N extends OperationName>(name: N, args: OperationArgs<N>): ArrayBuffer[] {
  return (TRANSFERS[name] as ((args: OperationArgs<N>) => ArrayBuffer[]) | undefined)?.(args) ?? [];
}

/** Runs operation `name` in transaction `tx`. */
export function runOperation<N extends OperationName>(
  tx: Kysely<Database>,
  capabilities: Capabilities,
  name: N,
  args: OperationArgs<N>,
): Promise<OperationResult<N>> {
  return (OPERATIONS[name] as (tx: Kysely<Database>, capabilities: Capabilities, args: OperationArgs<N>) => Promise<OperationResult<N>>)(
    tx,
    capabilities,
    args,
  );
}
