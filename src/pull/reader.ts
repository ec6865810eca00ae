/**
 * Reading a pull subscription's events: whose subscription it is, acknowledging by reading on,
 * and the events after a cursor as the subscriber receives them (the producer's bytes plus the
 * subscription's extensions). Shared by the long poll (api/pull-events-routes.ts) and any other way of
 * reading (a stream writes each event, then acknowledges its cursor).
 *
 * Readers have a share of the database of their own: at most `share` of their calls run at once
 * (the others wait in line), so that however many readers there are, /receive and the runners
 * keep the rest of PostgreSQL's pool and of SQLite's thread. Every call, its wait for the share
 * included, is bounded by NOTIFICATIONS_DATABASE_TIMEOUT; a call given up on before its turn is
 * not made. A reader waiting between reads holds no deadline and no share.
 */
import pLimit from 'p-limit';
import type { DatabaseHandle } from '../db/connect.js';
import { acknowledgeUpTo, readableAfter } from '../db/stores/pull.js';
import { findLiveSubscription } from '../db/stores/subscriptions.js';
import type { SubscriptionRow } from '../db/tables.js';
import { EventBodies } from '../delivery/event-body.js';
import { databaseUnavailable, serviceError, subscriptionNotFound } from '../errors.js';
import type { Metrics, PullOperation } from '../metrics/metrics.js';
import type { Clock } from '../time/clock.js';
import { within } from '../time/within.js';
import { canonicalUuid } from '../uuid.js';

/** One event as read: its cursor (opaque to the reader), its match, and the event's JSON text. */
export interface PulledEvent {
  cursor: string;
  elm: string;
  /** The event as it would be POSTed: JSON text. */
  event: string;
}

export interface PullReaderOptions {
  database: DatabaseHandle;
  clock: Clock;
  databaseTimeoutMs: number;
  /** Readers' database calls at once, at most (default READER_SHARE). */
  share?: number;
  metrics?: Pick<Metrics, 'pullDatabaseOperation'>;
}

export interface PullReader {
  /** The caller's live pull subscription: 404 when it is not theirs, 409 when it is push. */
  subscription(owner: string, uuid: string): Promise<SubscriptionRow>;
  /** Every pending row up to `cursor` is delivered (one attempt, stage pull). */
  acknowledge(subscription: SubscriptionRow, cursor: number): Promise<void>;
  /** At most `limit` events after `after`, in cursor order. */
  read(subscription: SubscriptionRow, after: number, limit: number): Promise<PulledEvent[]>;
}

/**
 * Readers' database calls at once: 3 of PostgreSQL's 10 pooled connections (db/connect.ts), and
 * on SQLite at most 3 calls queued for its one thread before a write of /receive's.
 */
export const READER_SHARE = 3;

/** Cursors are decimal numbers, but readers may not rely on it: `0` is before every event. */
export const FIRST_CURSOR = 0;
const CURSOR = /^(0|[1-9][0-9]{0,14})$/;

/** The cursor a reader sent, or undefined when it is not one. */
export function parseCursor(text: string): number | undefined {
  return CURSOR.test(text) ? Number(text) : undefined;
}

export function formatCursor(cursor: number): string {
  return String(cursor);
}

export function pullReader(options: PullReaderOptions): PullReader {
  const { database, databaseTimeoutMs } = options;
  const bodies = new EventBodies();
  const share = pLimit(options.share ?? READER_SHARE);
  const call = <T>(operation: PullOperation, work: () => Promise<T>): Promise<T> => {
    let givenUp = false;
    const turn = share(() => {
      if (givenUp) return Promise.resolve(undefined as T);
      options.metrics?.pullDatabaseOperation(operation);
      return work();
    });
    return within(turn, databaseTimeoutMs, () => {
      givenUp = true;
      return databaseUnavailable(databaseTimeoutMs);
    });
  };
  return {
    async subscription(owner, uuid) {
      const key = canonicalUuid(uuid);
      const row = key === undefined ? undefined : await call('lookup', () => findLiveSubscription(database.db, owner, key));
      if (!row) throw subscriptionNotFound(uuid);
      if (row.delivery !== 'pull') throw serviceError('SUBSCRIPTION_NOT_PULL', row.uuid);
      return row;
    },
    async acknowledge(subscription, cursor) {
      await call('acknowledge', () =>
        database.write((tx) => acknowledgeUpTo(tx, database.capabilities, subscription.uuid, cursor, options.clock())),
      );
    },
    async read(subscription, after, limit) {
      const rows = await call('read', () => readableAfter(database.db, subscription.uuid, after, limit));
      return rows.map((row) => ({
        cursor: formatCursor(row.cursor),
        elm: row.uuid,
        event: bodies.body({ uuid: row.event_uuid, spec_version: row.spec_version, body: row.body }, subscription.extensions),
      }));
    },
  };
}
