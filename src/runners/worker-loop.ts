/**
 * The loop a runner (or any periodic job) runs in: take what is due, and when there was none,
 * wait (until woken early by new work, or until the next poll). A failing step (the database
 * is down) is logged and retried after a growing pause, never in a hot loop. `stop` lets the
 * step in flight finish.
 */
import { Backoff } from '../time/backoff.js';
import { Pause } from '../time/pause.js';

/**
 * The longest pause after failing steps (the database is down), for every loop of the server's:
 * the runners, the subscription sync, following other processes' commits, the retention purge.
 */
export const MAX_ERROR_PAUSE_MS = 30_000;

export interface WorkerLoop {
  /** New work may be due: skip the rest of the idle wait. */
  wake(): void;
  /** Stops after the step in flight; resolves when it has finished. */
  stop(): Promise<void>;
}

export interface WorkerLoopOptions {
  /** Processes what is due; returns how many items it took (0: nothing was due). */
  step: () => Promise<number>;
  /** The wait after a step that took nothing (asked each time when a function). */
  idleMs: number | (() => number);
  maxErrorPauseMs: number;
  onError: (error: unknown) => void;
}

export function startWorkerLoop(options: WorkerLoopOptions): WorkerLoop {
  let running = true;
  const pause = new Pause();
  /** Woken while a step ran: the work may have come too late for it, so no pause follows. */
  let wokenDuringStep = false;

  const done = (async () => {
    // Twice the idle wait after the first failure, doubling with each one after.
    const idleMs = typeof options.idleMs === 'number' ? () => options.idleMs as number : options.idleMs;
    const errorPause = new Backoff(idleMs() * 2, options.maxErrorPauseMs);
    while (running) {
      try {
        wokenDuringStep = false;
        const taken = await options.step();
        errorPause.reset();
        if (taken === 0 && running && !wokenDuringStep) await pause.for(idleMs());
      } catch (error) {
        options.onError(error);
        if (running) await pause.for(errorPause.next());
      }
    }
  })();

  return {
    wake: () => {
      if (!pause.end()) wokenDuringStep = true;
    },
    stop: async () => {
      running = false;
      pause.end();
      await done;
    },
  };
}
