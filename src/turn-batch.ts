/**
 * Items handed over during one turn of the event loop, handed on together at its end: one
 * transaction (group commit), one multi-row insert (the event log), one message between threads
 * (the outbound thread) for all of them, instead of one each.
 *
 * A flush that returns a promise holds one of `lanes` until it settles. Items that arrive while
 * every lane is busy wait, and the first lane to come free takes them at once, at most
 * `maxBatch` at a time; otherwise a batch is what one turn brought. `flush` settles its own
 * items: it must not throw.
 */
export interface TurnBatchOptions {
  /** Flushes in flight at once at most (default: no limit). */
  lanes?: number;
  /** Items per flush at most (default: no limit). */
  maxBatch?: number;
}

export function batchPerTurn<T>(flush: (items: T[]) => void | Promise<void>, options: TurnBatchOptions = {}): (item: T) => void {
  const lanes = options.lanes ?? Infinity;
  const maxBatch = options.maxBatch ?? Infinity;
  let waiting: T[] = [];
  let scheduled = false;
  let busy = 0;

  async function drain(): Promise<void> {
    busy++;
    try {
      // Items waiting with a flush scheduled are left to it: they came during this turn.
      while (waiting.length > 0 && !scheduled) {
        const batch = waiting.length <= maxBatch ? waiting : waiting.slice(0, maxBatch);
        waiting = batch === waiting ? [] : waiting.slice(maxBatch);
        const flushed = flush(batch);
        if (flushed) await flushed;
      }
    } finally {
      busy--;
    }
  }

  return (item) => {
    waiting.push(item);
    if (!scheduled && busy < lanes) {
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        void drain();
      });
    }
  };
}
