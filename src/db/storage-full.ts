/**
 * The database refusing a write for lack of space: SQLite's SQLITE_FULL (the disk, or
 * max_page_count), PostgreSQL's SQLSTATE 53100 disk_full. Like the database not answering,
 * a condition of the moment and not a fault of the request: 503 with Retry-After, never 500.
 * Nothing is lost: the refused write did not commit, and its caller is told so.
 *
 * The watch keeps the state the service shows while it lasts (/readyz, the gauge): full from
 * a refused write until a write succeeds again. Only a write that began after the refusal and
 * needs space ends it: not one already under way when the refusal came (on SQLite the answers
 * of a refused batch and of the next one arrive together), nor one that may change nothing (a
 * claim that finds nothing due commits on a full disk). Reads are not observed at all. It
 * reports the condition when it begins and then at most once a minute, however many writes are
 * refused meanwhile. While full it tries a write of its own every few seconds: with no traffic
 * (a balancer that stopped sending, seeing /readyz fail) nothing else would find out that space
 * was freed.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './tables.js';
import { isDatabaseUnavailable } from './unavailable.js';

const POSTGRES_DISK_FULL = '53100';

/** True for an error (or one it wraps) that says the database has no space left for a write. */
export function isStorageFull(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'SQLITE_FULL' || code === POSTGRES_DISK_FULL) return true;
  }
  return false;
}

/**
 * Not a write's own failure but the database's state of the moment (not answering, or full):
 * the writes after it would fail alike, and it passes by itself.
 */
export function isConditionOfTheDatabase(error: unknown): boolean {
  return isDatabaseUnavailable(error) || isStorageFull(error);
}

export interface StorageReport {
  /** Writes are refused for lack of space: at the first refusal, then at most once a minute while it lasts. */
  full(error: unknown, refusedSinceLastReport: number): void;
  /** A write that began after the refusals succeeded. */
  recovered(fullForMs: number, refused: number): void;
}

/** A write under way, as the watch saw it begin (StorageWatch.begin). */
export interface WriteStart {
  /** The episode of fullness it began in; one under way when an episode begins is of the one before. */
  readonly episode: number;
  /** Its success proves that there is space (false: it may change nothing). */
  readonly needsSpace: boolean;
}

/** How often, at most, a storage that stays full is reported again. */
export const STORAGE_FULL_REPORT_MS = 60_000;
/** How often a write is tried while full, to find out that space was freed. */
export const STORAGE_PROBE_MS = 5_000;

export class StorageWatch {
  private fullSince: number | undefined;
  /** Episodes of fullness begun so far: the last is under way while `full`. */
  private episodes = 0;
  /** Across episodes: a storage that fills and frees again and again is still reported once a minute. */
  private lastReport = -Infinity;
  private reportedThisEpisode = false;
  private refusedSinceReport = 0;
  private refusedThisEpisode = 0;
  private readonly recoveryListeners: Array<() => void> = [];
  private probe: (() => Promise<unknown>) | undefined;
  private probeTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly report: Partial<StorageReport> = {},
    private readonly now: () => number = Date.now,
  ) {}

  /** A write was refused for lack of space, and no write has succeeded since. */
  get full(): boolean {
    return this.fullSince !== undefined;
  }

  /** Runs `listener` each time writes succeed again after refusals (to resume work that backed off). */
  onRecovered(listener: () => void): void {
    this.recoveryListeners.push(listener);
  }

  /** While full, `probe` (a write that needs space, its outcome observed) runs every few seconds. */
  probeWith(probe: () => Promise<unknown>): void {
    this.probe = probe;
  }

  /** No more probes (the database is closing). */
  stop(): void {
    this.probe = undefined;
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
  }

  /** A write begins; `mayChangeNothing` as in WriteOptions. Its outcome goes to `observe`. */
  begin({ mayChangeNothing = false }: { mayChangeNothing?: boolean } = {}): WriteStart {
    return { episode: this.episodes, needsSpace: !mayChangeNothing };
  }

  /** What came of the write begun as `write`: `error` when it failed (anything but a lack of space changes nothing here). */
  observe(write: WriteStart, error?: unknown): void {
    if (error === undefined) {
      if (write.needsSpace && write.episode === this.episodes) this.wrote();
    } else if (isStorageFull(error)) this.refused(error);
  }

  private refused(error: unknown): void {
    const now = this.now();
    if (this.fullSince === undefined) {
      this.fullSince = now;
      this.episodes++;
    }
    this.probeSoon();
    this.refusedSinceReport++;
    this.refusedThisEpisode++;
    if (now - this.lastReport < STORAGE_FULL_REPORT_MS) return;
    this.report.full?.(error, this.refusedSinceReport);
    this.lastReport = now;
    this.reportedThisEpisode = true;
    this.refusedSinceReport = 0;
  }

  private wrote(): void {
    if (this.fullSince === undefined) return;
    // An episode too short to be reported (within a minute of the last report) ends unreported too.
    if (this.reportedThisEpisode) this.report.recovered?.(this.now() - this.fullSince, this.refusedThisEpisode);
    this.fullSince = undefined;
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    this.reportedThisEpisode = false;
    this.refusedThisEpisode = 0;
    for (const listener of this.recoveryListeners) listener();
  }

  private probeSoon(): void {
    if (this.probe === undefined || this.probeTimer !== undefined) return;
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      // A refusal schedules the next as it is observed; another failure while full, here.
      void this.probe?.().catch(() => {
        if (this.full) this.probeSoon();
      });
    }, STORAGE_PROBE_MS);
    this.probeTimer.unref();
  }
}

const PROBE_SOURCE = '/svc-notifications/storage-probe';
/** About what an event takes: a smaller write could fit where an event would not. */
const PROBE_BODY = 'x'.repeat(4096);

/**
 * A write that needs space and leaves nothing behind: an event row written and deleted in one
 * transaction (the pages it touched are still written at the commit: SQLite's log, PostgreSQL's
 * WAL and heap). The events table, since that is where /receive writes.
 */
export async function writeSpaceProbe(tx: Kysely<Database>): Promise<void> {
  const uuid = randomUUID();
  await tx
    .insertInto('events')
    .values({ uuid, source: PROBE_SOURCE, event_id: uuid, type: 'probe', spec_version: '1.0', body: PROBE_BODY, received: 0 })
    .execute();
  await tx.deleteFrom('events').where('uuid', '=', uuid).execute();
}
