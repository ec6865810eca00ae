/**
 * The loop a stage runs in: take a batch of due work, and when there was none, wait (until
 * woken early by new work, or until the next poll). A failing step (the database is down) is
 * logged and retried after a growing pause, never in a hot loop. `stop` lets the step in
 * flight finish.
 */
export interface WorkerLoop {
  /** New work may be due: skip the rest of the idle wait. */
  wake(): void;
  /** Stops after the step in flight; resolves when it has finished. */
  stop(): Promise<void>;
}

export interface WorkerLoopOptions {
  /** Processes one batch; returns how many items it took (0: nothing was due). */
  step: () => Promise<number>;
  idleMs: number;
  maxErrorPauseMs: number;
  onError: (error: unknown) => void;
}

export function startWorkerLoop(options: WorkerLoopOptions): WorkerLoop {
  let running = true;
  let wakeUp: (() => void) | undefined;
  let errors = 0;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => (wakeUp = undefined));

  const done = (async () => {
    while (running) {
      try {
        const taken = await options.step();
        errors = 0;
        if (taken === 0 && running) await pause(options.idleMs);
      } catch (error) {
        options.onError(error);
        errors++;
        if (running) await pause(Math.min(options.maxErrorPauseMs, options.idleMs * 2 ** errors));
      }
    }
  })();

  return {
    wake: () => wakeUp?.(),
    stop: async () => {
      running = false;
      wakeUp?.();
      await done;
    },
  };
}
