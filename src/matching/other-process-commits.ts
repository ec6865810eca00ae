/**
 * On SQLite one server uses the file, but other processes write to it too: the CLI's
 * eventpurge, eventretry and reseal, and import-pacifica, which inserts subscriptions with their
 * original `created` and `updated`, however old. Nothing tells the server of their commits,
 * so it asks SQLite once a second: `PRAGMA data_version`, asked on the server's one connection,
 * changes exactly when another connection has committed (db/data-version.ts).
 *
 * Most of their commits leave the subscriptions alone (a purge deletes the log in batches, an
 * import writes it in batches), and reading every subscription takes seconds at 100,000 of
 * them. So a change of the data version is followed by a fingerprint of the table (its rows,
 * highest rowid, `updated`, deleted and disabled ones: db/stores/subscriptions.ts), and:
 * - the fingerprint as before: nothing more is read;
 * - moved, and the rows inserted since (rowid above the highest known) account for all of it:
 *   an import, or this server's own creates. Those rows are applied, and that is all;
 * - moved otherwise: an update or a delete, by another process, or by this server meanwhile (its
 *   own writes move the fingerprint too, and cannot be told apart). Every subscription is read
 *   again and applied, as after a lost listener on PostgreSQL: the matcher reloads (forgetting
 *   rows deleted from the table), and every row, whole, goes to `apply`, so that the delivery
 *   runner's copies follow.
 *
 * Measured with 100,000 facility-shaped subscriptions (45 MB of table) through the SQLite thread
 * as the server uses it, on a 2-core VM that other work kept busy (load average 5), medians:
 * - a look with nothing committed by another process: 1 statement, 0.1 to 0.6 ms;
 * - a look after a commit that leaves the subscriptions alone: 2 statements, 40 to 50 ms (the
 *   fingerprint reads every row: no index holds `updated`);
 * - after rows inserted: 3 statements and 45 ms for one row, 4 and 145 ms for 1,000 (their
 *   expressions compiled), one more statement each further 1,000;
 * - a reload: 104 statements (101 pages of 1,000 rows), 2.6 s, the event loop held 28 ms at a
 *   time (p99; 52 ms at most). Reading only what the matcher needs (`liveSubscriptionPages`)
 *   takes 1.3 s, in pages of 5,000 that hold it up to 220 ms, but the delivery runner's copies
 *   need whole rows.
 * After a reload, the next look waits three times as long as the reload took: while something
 * keeps changing subscriptions (this server's own updates, during a long eventpurge), reloads
 * take a quarter of the time at most, and the sync time of 100,000 subscriptions grows to about
 * ten seconds meanwhile.
 */
import type { Kysely } from 'kysely';
import { dataVersion } from '../db/data-version.js';
import { type SubscriptionChange, subscriptionPages } from '../db/stores/subscriptions.js';
import {
  fingerprintWith,
  sameFingerprint,
  type SubscriptionsFingerprint,
  type SubscriptionsState,
  subscriptionsByRowid,
  subscriptionsState,
} from '../db/stores/subscriptions-fingerprint.js';
import type { Database } from '../db/tables.js';
import type { Metrics, OtherProcessCommitsOutcome } from '../metrics/metrics.js';
import { startWorkerLoop } from '../runners/worker-loop.js';
import type { LiveMatcher } from './live-matcher.js';

/** Other processes' commits to the SQLite file are looked for this often. */
export const OTHER_PROCESS_COMMITS_POLL_MS = 1_000;

export interface OtherProcessCommitsLog {
  info(details: object, message: string): void;
}

export interface OtherProcessCommitsOptions {
  db: Kysely<Database>;
  /** Read (subscriptionsState) just before the matcher was loaded: commits after it are followed. */
  since: SubscriptionsState;
  matcher: LiveMatcher;
  /** Where each change read goes: the matcher, and whoever else keeps copies of subscriptions. */
  apply: (change: SubscriptionChange) => void;
  metrics: Pick<Metrics, 'otherProcessCommits'>;
  log: OtherProcessCommitsLog;
  /** How often the data version is asked. */
  pollMs: number;
  maxErrorPauseMs: number;
  /** A look failed; it is tried again after a pause, from the same state. */
  onError: (error: unknown) => void;
  /** Another process committed (an `eventretry`, say): the runners, waiting long while idle, look at the queue. */
  onCommitted?: () => void;
}

export interface OtherProcessCommits {
  /** Stops after the look in flight; resolves when it has finished. */
  stop(): Promise<void>;
}

/** Rows read per statement, inserted ones and a reload's. */
const PAGE_ROWS = 1_000;
/** After a reload, looks pause this many times as long as it took. */
const PAUSE_PER_RELOAD = 3;

export function followOtherProcessCommits(options: OtherProcessCommitsOptions): OtherProcessCommits {
  const { db, matcher, apply, log } = options;
  let known = options.since;
  let pausedUntil = 0;

  /** Applies the rows inserted since `before`; whether they account for every change up to `after`. */
  async function applyInserted(before: SubscriptionsFingerprint, after: SubscriptionsFingerprint): Promise<number | undefined> {
    let fingerprint = before;
    let inserted = 0;
    for (let from = before.lastRowid; ;) {
      const rows = await subscriptionsByRowid(db, from, after.lastRowid, PAGE_ROWS);
      for (const { row } of rows) apply({ kind: 'upsert', row });
      fingerprint = fingerprintWith(fingerprint, rows);
      inserted += rows.length;
      if (rows.length < PAGE_ROWS) break;
      from = rows.at(-1)!.rowid;
    }
    return sameFingerprint(fingerprint, after) ? inserted : undefined;
  }

  /** Reads every subscription; applies each, and a delete for each the matcher had that is gone. */
  async function reload(): Promise<{ subscriptions: number; forgotten: number }> {
    let subscriptions = 0;
    async function* live() {
      for await (const page of subscriptionPages(db, PAGE_ROWS)) {
        subscriptions += page.length;
        for (const row of page) apply({ kind: 'upsert', row });
        yield page.filter((row) => row.deleted === null);
      }
    }
    const gone = await matcher.reload(live());
    for (const uuid of gone) apply({ kind: 'delete', uuid });
    return { subscriptions, forgotten: gone.length };
  }

  async function follow(before: SubscriptionsFingerprint, after: SubscriptionsFingerprint): Promise<OtherProcessCommitsOutcome> {
    if (sameFingerprint(before, after)) return 'unchanged';
    const inserted = await applyInserted(before, after);
    if (inserted !== undefined) {
      // Inserted by another process, or created by this server meanwhile (already applied then).
      log.info({ subscriptions: inserted }, 'read the subscriptions inserted while another process committed to the database');
      return 'added';
    }
    const started = performance.now();
    const { subscriptions, forgotten } = await reload();
    const ms = Math.round(performance.now() - started);
    pausedUntil = performance.now() + PAUSE_PER_RELOAD * ms;
    log.info({ subscriptions, forgotten, ms }, 'subscriptions reloaded: they changed while another process committed to the database');
    return 'reloaded';
  }

  const loop = startWorkerLoop({
    step: async () => {
      if (performance.now() < pausedUntil) return 0;
      if ((await dataVersion(db)) === known.dataVersion) return 0;
      options.onCommitted?.();
      // Read before the rows it leads to: a commit after it moves the data version again, for the next look.
      const now = await subscriptionsState(db);
      options.metrics.otherProcessCommits(await follow(known.fingerprint, now.fingerprint));
      known = now;
      return 0;
    },
    idleMs: options.pollMs,
    maxErrorPauseMs: options.maxErrorPauseMs,
    onError: options.onError,
  });
  return { stop: () => loop.stop() };
}
