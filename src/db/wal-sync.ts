/**
 * SQLite's commit, made durable off the main thread. With `synchronous = FULL` SQLite fsyncs the
 * write-ahead log inside COMMIT, and better-sqlite3 runs COMMIT on the main thread: each commit
 * held every request for the ~1.3 ms of the fsync, nearly half of all the time spent in SQLite.
 * With `synchronous = NORMAL` COMMIT only writes the log; this class then fsyncs the log file
 * in libuv's thread pool, and a commit's writers are answered when that sync is done. That is
 * the same guarantee FULL gives in WAL mode (the log synced after each commit; checkpoints sync
 * the log before copying it and the database after), with the main thread free meanwhile.
 *
 * Syncs are shared: a call while one is running waits for it and then for one more (the running
 * one may have started before the caller's commit wrote its frames); every call arriving
 * meanwhile shares that next one.
 *
 * A commit that changed no row (a claim that found nothing due, the runners' look at an idle
 * queue) wrote nothing to the log: told by the connection's count of changed rows
 * (`changes`), which has not moved since the last sync began, it waits for that sync only, and
 * an idle server never syncs.
 *
 * A commit no one outside hears of (a claim, a settlement) asks for a sync soon instead
 * (`syncSoon`): it rides on the next sync a write asks for, or one runs within
 * SYNC_SOON_MS, as PostgreSQL's asynchronous commit leaves it to its WAL writer. In the counts
 * workload (300 events/s) that took the syncs from 0.72 to 0.33 an event.
 */
import { type FileHandle, open } from 'node:fs/promises';

/** How long a commit no one outside hears of may wait for the sync that makes it durable. */
export const SYNC_SOON_MS = 200;

export class WalSync {
  private file: FileHandle | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  /** After a failed fsync the kernel may have dropped the pages: nothing is durable any more. */
  private failure: unknown;
  /** The count of changed rows when the last sync began: every commit up to it is in that sync. */
  private covered: number | undefined;
  private soon: NodeJS.Timeout | undefined;
  private closed = false;

  /** `changes`: the connection's count of rows changed so far (SQLite's total_changes()); without it, every call syncs. */
  constructor(
    private readonly walPath: string,
    private readonly changes?: () => number,
  ) {}

  /** Settles once everything written to the log before this call is on disk. */
  sync(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.changes !== undefined && this.changes() === this.covered) return this.running ?? Promise.resolve();
    if (this.queued) return this.queued;
    if (!this.running) return this.begin();
    this.queued = this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.failure === undefined ? this.begin() : Promise.reject(this.failure);
      });
    return this.queued;
  }

  /**
   * Within SYNC_SOON_MS, everything written to the log before this call is on disk. Throws
   * once a sync has failed, as `sync` rejects.
   */
  syncSoon(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.soon !== undefined || this.closed) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      // A failure is kept: every later sync, and so every write answered on one, fails with it.
      this.sync().catch(() => undefined);
    }, SYNC_SOON_MS);
    this.soon.unref();
  }

  /** Syncs what is left and closes the file. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.soon);
    this.soon = undefined;
    // Writes made outside the group commit (the CLI's) are made durable here.
    await this.sync().catch(() => undefined);
    await this.file?.close();
    this.file = undefined;
  }

  private begin(): Promise<void> {
    this.covered = this.changes?.();
    const run = this.datasync().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async datasync(): Promise<void> {
    try {
      // Opened at the first sync: SQLite creates the log at the first write.
      this.file ??= await open(this.walPath, 'r');
      await this.file.datasync();
    } catch (error) {
      this.failure = new Error(`cannot sync the SQLite write-ahead log ${this.walPath}; restart the service`, { cause: error });
      throw this.failure;
    }
  }
}
