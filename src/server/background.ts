/**
 * The jobs beside the runners, built unstarted, in the order they start: following other
 * instances' subscription writes (PostgreSQL) or other processes' commits (a SQLite file), the
 * pull readers' poll while notifications do not flow, and the retention purge.
 */
import type { ExpectedNotifications } from '../db/expected-notifications.js';
import type { SubscriptionChange } from '../db/stores/subscriptions.js';
import type { SubscriptionsState } from '../db/stores/subscriptions-fingerprint.js';
import { startRetentionPurge } from '../runners/retention.js';
import { followOtherProcessCommits, OTHER_PROCESS_COMMITS_POLL_MS } from '../matching/other-process-commits.js';
import { startSubscriptionSync, SYNC_CLOCK_SKEW_US, SYNC_LISTENING_POLL_MS, SYNC_POLL_MS } from '../matching/subscription-sync.js';
import { startFallbackPoll } from '../pull/fallback-poll.js';
import type { PullWaiters } from '../pull/waiters.js';
import { MAX_ERROR_PAUSE_MS } from '../runners/worker-loop.js';
import type { ServerBase } from './base.js';
import { unlessStorageFull } from './database.js';
import { type Part, startedBy } from './lifecycle.js';
import { PROGRAM } from './program.js';

export interface BackgroundOptions extends ServerBase {
  waiters: PullWaiters;
  /** Where each subscription write read goes (followSubscriptionWrites). */
  onChange: (change: SubscriptionChange) => void;
  /** Given where instances share the database: other instances' writes are followed. */
  expected: ExpectedNotifications | undefined;
  /** Given on a SQLite file (prepareDatabase): other processes' commits are followed from there. */
  loadedFrom: SubscriptionsState | undefined;
  /** When the matcher's load began (µs, the clock's): other instances' writes are followed from then. */
  loadStartedAt: number;
  /** Work may have come to the queue unannounced (another process committed, listening began again): the runners look. */
  wakeRunners: () => void;
}

export interface BackgroundJobs {
  parts: Part[];
  /** Whether every row made readable is announced to this instance's pull readers now (pull/shared-reads.ts). */
  readableAnnounced(): boolean;
  /** PostgreSQL: whether the listener hears every instance's readable rows now, this one's included. */
  listening(): boolean;
}

export function backgroundJobs(options: BackgroundOptions): BackgroundJobs {
  const { config, log, database, clock, metrics, matcher, waiters, onChange, expected, loadedFrom, loadStartedAt, wakeRunners } = options;
  const sync =
    expected === undefined
      ? undefined
      : startedBy('subscription sync', () =>
          startSubscriptionSync({
            expected,
            database,
            url: config.databaseUrl,
            applicationName: `${PROGRAM} listener ${process.pid}`,
            matcher,
            apply: onChange,
            clock,
            pollMs: SYNC_POLL_MS,
            listeningPollMs: SYNC_LISTENING_POLL_MS,
            skewUs: SYNC_CLOCK_SKEW_US,
            loadStartedAt,
            maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
            log,
            // Other instances' readable rows, heard on the same connection; missed ones while it was down.
            onReadable: (subscription) => waiters.wake(subscription),
            // Rows given back or routed again anywhere: idle runners claim now, not at their next poll.
            onQueued: wakeRunners,
            onListening: () => {
              waiters.wakeAll();
              wakeRunners();
            },
          }),
        );
  // One server per SQLite file, but the CLI and an import write to it too.
  const otherProcesses =
    loadedFrom === undefined
      ? undefined
      : startedBy("other processes' commits", () =>
          followOtherProcessCommits({
            db: database.db,
            since: loadedFrom,
            matcher,
            apply: onChange,
            metrics,
            log,
            pollMs: OTHER_PROCESS_COMMITS_POLL_MS,
            maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
            onCommitted: wakeRunners,
            onError: unlessStorageFull((error) =>
              log.error({ err: error }, "following other processes' commits to the database failed; retrying"),
            ),
          }),
        );
  const fallbackPoll =
    sync === undefined
      ? undefined
      : startedBy('pull fallback poll', () =>
          startFallbackPoll({
            db: database.db,
            waiters,
            // Started after the sync, stopped with it.
            listening: () => sync.running?.listening ?? false,
            onError: (error) => log.warn({ err: error }, 'pull readers: cannot ask for readable events'),
          }),
        );
  const retention = startedBy('retention purge', () =>
    startRetentionPurge({
      database,
      clock,
      retentionMs: config.retentionMs,
      metrics,
      maxErrorPauseMs: MAX_ERROR_PAUSE_MS,
      onError: unlessStorageFull((error) => log.error({ err: error }, 'retention purge failed; retrying')),
    }),
  );
  return {
    parts: [sync, otherProcesses, fallbackPoll, retention].filter((job) => job !== undefined),
    // SQLite: this instance makes every row readable itself; PostgreSQL: while the listener hears the others.
    readableAnnounced: () => sync === undefined || (sync.running?.listening ?? false),
    listening: () => sync?.running?.listening ?? false,
  };
}
