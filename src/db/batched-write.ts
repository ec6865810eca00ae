/**
 * Writes of one kind that arrive during one turn of the event loop are made together, by one
 * call that takes them all (one multi-row statement instead of one each), in one transaction
 * of the group commit. A statement is a socket write to PostgreSQL: one insert per create
 * spent a fifth of the main thread in `writev`.
 *
 * Should the batch fail, its items are written one by one, so one item's failure is its own
 * (unless the database itself is the cause: not answering, or out of space).
 */
import { batchPerTurn } from '../turn-batch.js';
import type { DatabaseHandle } from './connect.js';
import type { WriteOptions } from './group-commit.js';
import type { OperationArgs, OperationName, OperationResult } from './operations.js';
import { isConditionOfTheDatabase } from './storage-full.js';

interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

export interface BatchOptions extends WriteOptions {
  /** Items one operation takes at most (more wait for the next); with `oneStatement`, what one statement holds. */
  maxBatch?: number;
}

/**
 * Returns a function that writes one item, batched with the others of its turn, by a named
 * operation (operations.ts) run where the database's connection is: `argsOf` makes its
 * arguments of the items, and it answers one result per item. It settles after the commit
 * that made the item durable.
 */
export function batchedOperation<N extends BatchOperation, T>(
  database: DatabaseHandle,
  name: N,
  argsOf: (items: readonly T[]) => OperationArgs<N>,
  { maxBatch, ...options }: BatchOptions = {},
): (item: T) => Promise<OperationResult<N>[number]> {
  type Result = OperationResult<N>[number];
  // TypeScript does not narrow the result of a generic N to an array: BatchOperation says it is one.
  return batched<T, Result>((items) => database.perform(name, argsOf(items), options) as Promise<readonly Result[]>, maxBatch);
}

/** The operations that answer one result per item. */
type BatchOperation = { [N in OperationName]: OperationResult<N> extends readonly unknown[] ? N : never }[OperationName];

function batched<T, R>(writeAll: (items: readonly T[]) => Promise<readonly R[]>, maxBatch: number | undefined): (item: T) => Promise<R> {
  const add = batchPerTurn<Waiting<T, R>>(
    async (batch) => {
      try {
        const results = await writeAll(batch.map((w) => w.item));
        for (const [i, w] of batch.entries()) w.resolve(results[i]!);
      } catch (error) {
        if (batch.length === 1) return batch[0]!.reject(error);
        // The database not answering, or full, would refuse each item alike.
        if (isConditionOfTheDatabase(error)) {
          for (const w of batch) w.reject(error);
          return;
        }
        for (const w of batch) writeAll([w.item]).then((results) => w.resolve(results[0]!), w.reject);
      }
    },
    { maxBatch },
  );
  return (item) => new Promise((resolve, reject) => add({ item, resolve, reject }));
}
