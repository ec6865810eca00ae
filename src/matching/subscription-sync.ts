/**
 * Keeps this instance's matcher in step with subscriptions written through other instances
 * on the same PostgreSQL database: a notification names each write as it commits, and a poll
 * catches whatever notifications missed (the listening connection was down, or came up after
 * the write). While notifications flow the poll runs seldom; while they do not, often enough
 * to stay within a second. When listening starts again after the connection was lost (a
 * database restart, a failover, pg_terminate_backend), the matcher is reloaded whole.
 */
import type { DatabaseHandle } from '../db/connect.js';
import { startSubscriptionListener } from '../db/subscription-notifications.js';
import type { SubscriptionChange } from '../db/stores/subscriptions.js';
import { startWorkerLoop, type WorkerLoop } from '../runners/worker-loop.js';
import type { Clock } from '../time/clock.js';
import type { ExpectedNotifications } from '../db/expected-notifications.js';
import type { LiveMatcher } from './live-matcher.js';
import { subscriptionRefresh } from './subscription-refresh.js';

/** Other instances' subscription writes are polled for this often while notifications do not flow. */
export const SYNC_POLL_MS = 500;
/**
 * The poll while notifications flow. PostgreSQL delivers every notification to a session that
 * listened when the write committed, and a read of notified rows that failed makes the poll due
 * at once: this one is only a safety net, slow enough that an idle instance commits seldom.
 */
export const SYNC_LISTENING_POLL_MS = 60_000;
/** Ten seconds of clock skew between instances is tolerated. */
export const SYNC_CLOCK_SKEW_US = 10_000_000;

export interface SubscriptionSyncLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export interface SubscriptionSyncOptions {
  database: DatabaseHandle;
  /** The database URL, for the listening connection of its own. */
  url: string;
  /** How the listening connection names itself in pg_stat_activity. */
  applicationName: string;
  matcher: LiveMatcher;
  /** Where each change read goes: the matcher, and whoever else keeps copies of subscriptions. */
  apply: (change: SubscriptionChange) => void;
  clock: Clock;
  /** Poll interval while notifications do not flow. */
  pollMs: number;
  /** Poll interval while they do. */
  listeningPollMs: number;
  /** Clock skew between instances tolerated (µs). */
  skewUs: number;
  /** When the matcher's load began (µs): writes from then on are polled for, though the listener was not yet listening. */
  loadStartedAt?: number;
  maxErrorPauseMs: number;
  log: SubscriptionSyncLog;
  /** Rows of a pull subscription became readable, on any instance (heard on the same connection). */
  onReadable?: (subscription: string) => void;
  /** Listening began (again): what was committed meanwhile went unheard. */
  onListening?: () => void;
  /** Rows went back to the queue for a claim, on any instance or by the CLI (heard on the same connection). */
  onQueued?: () => void;
  /** This instance's creates, applied already: their notifications are not read back. */
  expected?: ExpectedNotifications;
}

export interface SubscriptionSync {
  readonly listening: boolean;
  /** The listening connection's server process, while there is one. */
  readonly listenerPid: number | undefined;
  stop(): Promise<void>;
}

export function startSubscriptionSync(options: SubscriptionSyncOptions): SubscriptionSync {
  const { log } = options;
  let loop: WorkerLoop | undefined;
  // Due at once: at start, and when listening begins (again), since writes committed before
  // LISTEN took effect were not heard.
  let pollDue = true;
  const refresh = subscriptionRefresh({
    database: options.database,
    matcher: options.matcher,
    apply: options.apply,
    clock: options.clock,
    windowUs: options.skewUs,
    ...(options.loadStartedAt === undefined ? {} : { since: options.loadStartedAt }),
    onError: (error) => {
      log.error({ err: error }, 'reading notified subscriptions failed; the poll will find them');
      pollDue = true;
      loop?.wake();
    },
    ...(options.expected ? { expected: options.expected } : {}),
  });
  let lastPoll = 0;
  /** Listening was lost since the last reload: notifications may have been missed. */
  let lost = false;
  let reloadDue = false;
  const listener = startSubscriptionListener({
    url: options.url,
    applicationName: options.applicationName,
    onNotify: (uuid) => refresh.notified(uuid),
    ...(options.onReadable ? { onReadable: options.onReadable } : {}),
    ...(options.onQueued ? { onQueued: options.onQueued } : {}),
    onListening: ({ channel, backendPid }) => {
      log.info({ channel, backendPid }, 'listening for subscription changes');
      options.onListening?.();
      pollDue = true;
      if (lost) reloadDue = true;
      loop?.wake();
    },
    onLost: (error, retryInMs) => {
      log.warn({ err: error, retryInMs }, 'not listening for subscription changes; polling meanwhile');
      lost = true;
      loop?.wake();
    },
  });
  loop = startWorkerLoop({
    step: async () => {
      if (reloadDue) {
        reloadDue = false;
        lost = false;
        try {
          const forgotten = await refresh.reload();
          log.info({ forgotten }, 'subscriptions reloaded after listening was lost');
        } catch (error) {
          reloadDue = true;
          throw error;
        }
      }
      const now = options.clock();
      const interval = listener.listening ? options.listeningPollMs : options.pollMs;
      if (!pollDue && now - lastPoll < interval * 1000) return 0;
      pollDue = false;
      try {
        await refresh.poll();
      } catch (error) {
        pollDue = true;
        throw error;
      }
      lastPoll = now;
      return 0;
    },
    // The step decides whether a poll is due; it is asked this often.
    idleMs: Math.min(options.pollMs, options.listeningPollMs),
    maxErrorPauseMs: options.maxErrorPauseMs,
    onError: (error) => log.error({ err: error }, 'subscription refresh failed; retrying'),
  });
  const running = loop;
  return {
    get listening() {
      return listener.listening;
    },
    get listenerPid() {
      return listener.backendPid;
    },
    stop: async () => {
      await Promise.all([running.stop(), listener.close()]);
      await refresh.settled();
    },
  };
}
