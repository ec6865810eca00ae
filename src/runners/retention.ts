/**
 * The retention purge: the server itself deletes, in the background, the events received
 * longer ago than NOTIFICATIONS_RETENTION whose matches are all finished, with their matches
 * and attempts. It sits with the rest of the event log's life (receive.ts logs events in;
 * this takes them out); the SQL is in db/stores/event-log.ts, shared with `eventpurge`.
 *
 * Pull rows never read within the retention are expired first (state `expired`), so that their
 * events can go like any other.
 *
 * Work comes in rounds: each round deletes batches of the oldest eligible events until one
 * comes back short (caught up), then waits for the next. Several instances on one PostgreSQL
 * database each run the purge; `SKIP LOCKED` gives them different batches, so none waits for
 * another and no event is deleted twice.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseHandle } from '../db/connect.js';
import { ONE_WRITER_PAUSE_MS, purgeOldestEventsBefore } from '../db/stores/event-log.js';
import { expireUnread } from '../db/stores/pull.js';
import type { Metrics } from '../metrics/metrics.js';
import { startWorkerLoop } from './worker-loop.js';
import type { Clock } from '../time/clock.js';

/**
 * Events per batch, each batch its own transaction. Fewer than the CLI's 500: SQLite runs on
 * the server's main thread, so a batch holds up every request, not only the writes. On this
 * 2-core VM (busy), 200 events with three matches and six attempts each (2,000 rows) took
 * 10–20 ms on SQLite, 50–80 ms when the commit ran a WAL checkpoint (500: 30–100 ms);
 * PostgreSQL took 12–40 ms, off the main thread.
 */
export const PURGE_BATCH = 200;
/** The rounds come every hundredth of the retention, within these bounds (see roundIntervalMs). */
const MIN_ROUND_MS = 1_000;
const MAX_ROUND_MS = 300_000;

export interface RetentionPurgeOptions {
  database: DatabaseHandle;
  clock: Clock;
  /** `off`: nothing is purged, and the database is never asked. */
  retentionMs: number | 'off';
  metrics: Pick<Metrics, 'eventsPurged'>;
  /** Longest pause after failing rounds (the database is down): they double from two rounds up to it. */
  maxErrorPauseMs: number;
  /** A round failed; it is tried again after a pause. */
  onError: (error: unknown) => void;
  batchSize?: number;
}

export interface RetentionPurge {
  /** Stops after the batch in flight; resolves when it has finished. */
  stop(): Promise<void>;
}

/**
 * How long between rounds: a hundredth of the retention, so an event outlives it by at most
 * 1% (a retention of a minute is checked every second), but no more often than once a second
 * and no less than every 5 minutes (the 30-day default: two indexed statements every 5 minutes
 * when idle, where once a minute they were 2 of an idle PostgreSQL instance's 7 commits a minute).
 */
export function roundIntervalMs(retentionMs: number): number {
  return Math.min(MAX_ROUND_MS, Math.max(MIN_ROUND_MS, Math.round(retentionMs / 100)));
}

export function startRetentionPurge(options: RetentionPurgeOptions): RetentionPurge {
  const { database, clock, retentionMs, metrics } = options;
  if (retentionMs === 'off') return { stop: async () => {} };
  const batchSize = options.batchSize ?? PURGE_BATCH;
  const { skipLocked, oneWriter } = database.capabilities;
  const stopping = new AbortController();

  const purgeBatch = async (): Promise<number> => {
    const now = clock();
    const before = now - retentionMs * 1000;
    const expired = await expireUnread(database.db, before, now, batchSize);
    const purged = await purgeOldestEventsBefore(database.db, before, batchSize, { force: false, skipLocked });
    const events = purged.eventUuids.length;
    if (events > 0) metrics.eventsPurged(events, purged.matches);
    // A short batch: caught up. Reporting no work makes the loop wait for the next round.
    if (events < batchSize && expired < batchSize) return 0;
    if (oneWriter) await sleep(ONE_WRITER_PAUSE_MS, undefined, { signal: stopping.signal }).catch(() => undefined);
    return events;
  };

  const loop = startWorkerLoop({
    step: purgeBatch,
    idleMs: roundIntervalMs(retentionMs),
    maxErrorPauseMs: options.maxErrorPauseMs,
    onError: options.onError,
  });
  return {
    stop: async () => {
      stopping.abort();
      await loop.stop();
    },
  };
}
