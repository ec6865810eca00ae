/**
 * The items of `source` (pages of rows), each next one asked for as soon as the one before
 * arrives: its read (in the SQLite thread, or in PostgreSQL) runs while the caller works on the
 * one before, rather than after. Loading 1,000,000 subscriptions at start-up otherwise waits
 * for each page in turn, with the main thread idle.
 */
export async function* readAhead<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]();
  const ask = () => {
    const read = iterator.next();
    // A read that fails while the caller works is thrown when awaited, not left unhandled meanwhile.
    read.catch(() => undefined);
    return read;
  };
  let next = ask();
  let done = false;
  try {
    for (;;) {
      const current = await next;
      if (current.done) {
        done = true;
        return;
      }
      next = ask();
      yield current.value;
    }
  } finally {
    // The caller stopped early: the source is closed once the read under way has ended.
    if (!done) void next.then(() => iterator.return?.()).catch(() => undefined);
  }
}
