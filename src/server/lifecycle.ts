/**
 * The server's running parts, listed once, in the order they start. A shutdown stops them in
 * the reverse order, each once the one after it in the list has stopped. Parts grouped
 * `together` start in their order and stop at once, none waiting for another.
 */
export interface Part {
  readonly name: string;
  /** Starts it; a part opened as it was built (the database, the outbound thread) has none. */
  start?(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/**
 * A job that starts as it is built (`begin`, such as startRetentionPurge), made a part: built by
 * `start()`, stopped through the handle `begin` returned.
 */
export interface StartedBy<T> extends Part {
  /** The handle, once started. */
  readonly running: T | undefined;
}

export function startedBy<T extends { stop(): void | Promise<void> }>(name: string, begin: () => T): StartedBy<T> {
  let running: T | undefined;
  return {
    name,
    get running() {
      return running;
    },
    start: () => {
      running = begin();
    },
    stop: () => running?.stop(),
  };
}

export function together(name: string, parts: readonly Part[]): Part {
  return {
    name,
    start: () => startAll(parts),
    stop: async () => {
      await Promise.all(parts.toReversed().map((part) => part.stop()));
    },
  };
}

/**
 * Starts each part in order. Parts that start synchronously start in one run, with no turn of
 * the event loop (and so no signal) between them.
 */
export async function startAll(parts: readonly Part[]): Promise<void> {
  for (const part of parts) {
    const started = part.start?.();
    if (started) await started;
  }
}

export async function stopAll(parts: readonly Part[]): Promise<void> {
  for (const part of parts.toReversed()) await part.stop();
}
