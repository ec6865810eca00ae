/**
 * What the service tells a subscription's owner of (operational events): the subscription was
 * disabled, enabled again, or its deliveries are failing. The events that tell it are logged,
 * with their match rows, in the transaction of the change they tell of, so that neither is
 * written without the other. What the events say and whom they match is decided above the
 * database (receive/operational-events.ts), and given to the writers as a `NoticeEvents`.
 */
import type { Kysely } from 'kysely';
import { type EventToLog, logEvents } from './events.js';
import type { Database, SubscriptionRow } from '../tables.js';

export type SubscriptionNotice =
  | { kind: 'disabled' | 'enabled'; subscription: SubscriptionRow }
  | { kind: 'failing'; subscription: SubscriptionRow; failures: number; error: string };

/** The event that tells of `notice`, made at `at`, with its match rows (none: nobody listens). */
export type NoticeEvents = (notice: SubscriptionNotice, at: number) => EventToLog;

/** Logs the events telling of `notices`, in their order; returns how many match rows they made. */
export async function logNotices(
  db: Kysely<Database>,
  notices: readonly SubscriptionNotice[],
  toEvents: NoticeEvents | undefined,
  at: number,
): Promise<number> {
  if (toEvents === undefined || notices.length === 0) return 0;
  const entries = notices.map((notice) => toEvents(notice, at));
  await logEvents(db, entries);
  return entries.reduce((sum, entry) => sum + entry.matches.length, 0);
}
