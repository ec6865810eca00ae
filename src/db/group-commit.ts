/**
 * Group commit: writes that arrive while a commit is being prepared share one transaction,
 * so many requests pay for one fsync. SQLite syncing each commit manages ~4,000 commits a
 * second on this disk; one create per commit held the service to 1,750 creates/s.
 *
 * Writes that share a transaction run one after another in it, without savepoints (on
 * PostgreSQL each savepoint and its release are two more round trips per write). Should one
 * of them fail (a constraint, a bug), the transaction is rolled back and each write of the
 * batch runs again alone, so that its failure is its own and the others still commit. A
 * write's promise settles only after the commit, so an answer sent on it is durable.
 *
 * With `log`, a commit's writers are answered only once it is synced: SQLite's commit is
 * made durable by syncing its log off the main thread (wal-sync.ts), while the next commit
 * is already being written. A commit whose writes all `syncLater` is answered at once, and
 * synced soon.
 *
 * `concurrency` commits may be in flight at once: 1 for SQLite (one writer anyway), the pool
 * size less one (kept for reads) for PostgreSQL, whose connections commit in parallel (one lane held PostgreSQL to
 * 1,900 creates/s against 4,600 without grouping).
 */
import type { Kysely } from 'kysely';
import { batchPerTurn } from '../turn-batch.js';
import { isConditionOfTheDatabase } from './storage-full.js';
import type { Database } from './tables.js';

type Write<T> = (tx: Kysely<Database>) => Promise<T>;

/** Runs `work` in one transaction: begun, then committed, or rolled back when it throws. */
export type TransactionRunner = <T>(work: (tx: Kysely<Database>) => Promise<T>) => Promise<T>;

/** Runs `work` outside any transaction: each of its statements commits by itself. */
export type StatementRunner = <T>(work: (db: Kysely<Database>) => Promise<T>) => Promise<T>;

export interface WriteOptions {
  /**
   * The write needs no transaction: it is one statement, which is atomic by itself (reads may
   * follow it), or one round trip of statements, which is one transaction (postgres-round-trip.ts).
   * With nothing else to commit at the same moment it runs alone, where the
   * database has a statement runner: on PostgreSQL that is two round trips (BEGIN, COMMIT)
   * fewer, and under load most commits held a single write.
   */
  oneStatement?: boolean;
  /**
   * Its success says nothing of free space: it often changes no row (a claim that finds nothing
   * due), and such a write commits even on a full disk. It does not end a storage-full state.
   */
  mayChangeNothing?: boolean;
  /**
   * No one outside the service hears of its commit (a claim, a settlement): on SQLite it is
   * answered once committed, and made durable by the next sync or within SYNC_SOON_MS. A power
   * cut meanwhile loses it, as it would an instant earlier: the deliveries it recorded are made
   * again. Writes answered to a client (an event received, a subscription) never use it.
   */
  syncLater?: boolean;
}

/** SQLite's write-ahead log, synced (wal-sync.ts). */
export interface LogSync {
  sync(): Promise<void>;
  /** Throws once the log cannot be synced. */
  syncSoon(): void;
}

interface Pending {
  write: Write<unknown>;
  oneStatement: boolean;
  syncLater: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** More writes than this wait for the next commit, so a burst cannot grow one without bound. */
const MAX_WRITES_PER_COMMIT = 500;

export class GroupCommit {
  private readonly add: (pending: Pending) => void;

  constructor(
    private readonly transaction: TransactionRunner,
    concurrency: number,
    private readonly log?: LogSync,
    private readonly statements?: StatementRunner,
  ) {
    // Let the writes of requests already read off the sockets join this commit.
    this.add = batchPerTurn((batch) => this.commit(batch), { lanes: concurrency, maxBatch: MAX_WRITES_PER_COMMIT });
  }

  run<T>(write: Write<T>, options: WriteOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) =>
      this.add({
        write,
        oneStatement: options.oneStatement === true,
        syncLater: options.syncLater === true,
        resolve: resolve as (value: unknown) => void,
        reject,
      }),
    );
  }

  private async commit(batch: Pending[]): Promise<void> {
    const only = batch.length === 1 ? batch[0] : undefined;
    if (this.statements && only?.oneStatement) {
      try {
        const statements = this.statements;
        return this.settleWhenDurable(batch, [{ ok: true, value: await retryingConflicts(() => statements(only.write)) }]);
      } catch (error) {
        return rejectAll(batch, error);
      }
    }
    let failedWrite: unknown;
    let values: unknown[];
    try {
      values = await this.inTransaction(async (tx) => {
        failedWrite = undefined;
        const results: unknown[] = [];
        for (const pending of batch) {
          try {
            results.push(await pending.write(tx));
          } catch (error) {
            failedWrite = error;
            throw error;
          }
        }
        return results;
      });
    } catch (error) {
      // A write failed, and others shared its transaction: each is run alone. When the commit
      // failed, or the database is not answering or has no space, none of the batch is durable.
      if (failedWrite === error && batch.length > 1 && !isConditionOfTheDatabase(error)) return this.eachAlone(batch);
      return rejectAll(batch, error);
    }
    this.settleWhenDurable(
      batch,
      values.map((value) => ({ ok: true, value })),
    );
  }

  private async eachAlone(batch: Pending[]): Promise<void> {
    const outcomes: Outcome[] = [];
    for (const [i, pending] of batch.entries()) {
      try {
        outcomes.push({ ok: true, value: await this.inTransaction(pending.write) });
      } catch (error) {
        if (isConditionOfTheDatabase(error)) {
          this.settleWhenDurable(batch.slice(0, i), outcomes);
          return rejectAll(batch.slice(i), error);
        }
        outcomes.push({ ok: false, error });
      }
    }
    this.settleWhenDurable(batch, outcomes);
  }

  private inTransaction<T>(work: Write<T>): Promise<T> {
    return retryingConflicts(() => this.transaction(work));
  }

  private settleWhenDurable(batch: Pending[], outcomes: Outcome[]): void {
    const settle = () => {
      for (const [i, pending] of batch.entries()) {
        const outcome = outcomes[i]!;
        if (outcome.ok) pending.resolve(outcome.value);
        else pending.reject(outcome.error);
      }
    };
    if (!this.log || !outcomes.some((outcome) => outcome.ok)) return settle();
    if (batch.every((pending) => pending.syncLater)) {
      try {
        this.log.syncSoon();
      } catch (error) {
        return rejectAll(batch, error);
      }
      return settle();
    }
    this.log.sync().then(settle, (error) => rejectAll(batch, error));
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Runs `attempt` (a transaction, or one write that is atomic by itself), again when PostgreSQL
 * rolled it back to break a deadlock (40P01) or a serialization conflict (40001) with another
 * instance's: run again, it goes through (the other has committed or rolled back by then).
 */
async function retryingConflicts<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (tries >= CONFLICT_TRIES || !isTransactionConflict(error)) throw error;
    }
  }
}

const CONFLICT_TRIES = 3;
const CONFLICT_STATES = new Set(['40P01', '40001']);

function isTransactionConflict(error: unknown): boolean {
  return CONFLICT_STATES.has(String((error as { code?: unknown } | undefined)?.code));
}

function rejectAll(batch: Pending[], error: unknown): void {
  for (const pending of batch) pending.reject(error);
}
