/**
 * SQLite transactions that take the write lock as they begin (BEGIN IMMEDIATE), so that a lock
 * held elsewhere (the CLI's eventpurge, a backup) is met there, before any work, and nowhere
 * after. Met there, it is tried again after a pause that blocks nothing, until `timeoutMs`
 * have passed: then DatabaseUnavailable. Used on both sides of the SQLite thread: by the main
 * thread's group commit, whose statements cross to the thread, and by the thread's own.
 */
import { type Kysely, sql } from 'kysely';
import type { TransactionRunner } from './group-commit.js';
import type { Database } from './tables.js';
import { DatabaseUnavailable, isDatabaseUnavailable } from './unavailable.js';

/** How long SQLite itself waits for a lock, in the thread that asked, before saying SQLITE_BUSY. */
export const SQLITE_BUSY_SLICE_MS = 20;
/** The pause between two tries at the write lock, in which the event loop goes on. */
const SQLITE_BUSY_PAUSE_MS = 20;

/**
 * `rollback` rolls back only while a transaction is still open: on some errors (SQLITE_FULL,
 * SQLITE_IOERR, SQLITE_NOMEM: a COMMIT that could not write the log) SQLite has already rolled
 * the whole transaction back itself, and a ROLLBACK would then fail with "no transaction is
 * active", thrown instead of the error that says what happened.
 */
export function immediateTransaction(db: Kysely<Database>, rollback: () => Promise<void>, timeoutMs: number): TransactionRunner {
  return async (work) => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      let begun = false;
      try {
        return await db.connection().execute(async (connection) => {
          await sql`begin immediate`.execute(connection);
          begun = true;
          try {
            const result = await work(connection);
            await sql`commit`.execute(connection);
            return result;
          } catch (error) {
            await rollback();
            throw error;
          }
        });
      } catch (error) {
        if (begun || !isDatabaseUnavailable(error)) throw error;
        if (performance.now() + SQLITE_BUSY_PAUSE_MS > deadline) {
          throw new DatabaseUnavailable(`the database is locked by another connection; waited ${timeoutMs / 1000} s`, { cause: error });
        }
        await new Promise((resolve) => setTimeout(resolve, SQLITE_BUSY_PAUSE_MS));
      }
    }
  };
}
