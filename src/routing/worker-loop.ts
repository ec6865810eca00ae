/**
 * The loop a stage runs in: take a batch of due work, and when there was none, wait (until
 * woken early by new work, or until the next poll). A failing step (the database is down) is
 * logged and retried after a growing pause, never in a hot loop. `stop` lets the step in
 * flight finish. With `concurrency` above one, up to that many copies of the loop take
 * batches side by side, so a batch waiting on slow targets does not hold up the next: `wake`
 * starts one idle copy, and a copy that found a full batch starts another.
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
  /** Copies of the loop running at once (default 1). */
  concurrency?: number;
  /** A step that took this many found more work than one copy handles: another copy is woken. */
  fullBatch?: number;
}

export function startWorkerLoop(options: WorkerLoopOptions): WorkerLoop {
  let running = true;
  const wakeUps = new Set<() => void>();

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const wakeUp = () => {
        clearTimeout(timer);
        wakeUps.delete(wakeUp);
        resolve();
      };
      const timer = setTimeout(wakeUp, ms);
      wakeUps.add(wakeUp);
    });

  const loop = async () => {
    let errors = 0;
    while (running) {
      try {
        const taken = await options.step();
        errors = 0;
        if (options.fullBatch !== undefined && taken >= options.fullBatch) wakeOne();
        if (taken === 0 && running) await pause(options.idleMs);
      } catch (error) {
        options.onError(error);
        errors++;
        if (running) await pause(Math.min(options.maxErrorPauseMs, options.idleMs * 2 ** errors));
      }
    }
  };
  const done = Promise.all(Array.from({ length: options.concurrency ?? 1 }, loop));
  const wakeOne = () => wakeUps.values().next().value?.();
  const wakeAll = () => {
    for (const wakeUp of [...wakeUps]) wakeUp();
  };

  return {
    wake: wakeOne,
    stop: async () => {
      running = false;
      wakeAll();
      await done;
    },
  };
}
