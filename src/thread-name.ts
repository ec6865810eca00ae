/**
 * Names the calling thread for the operating system, so that `top -H`, `perf` and the
 * benchmarks' CPU table tell the service's threads apart: every thread of a Node process is
 * otherwise called `node`. Linux only (`/proc/thread-self/comm`, 15 bytes at most); elsewhere
 * nothing happens.
 */
import { writeFileSync } from 'node:fs';

export const SQLITE_THREAD_NAME = 'notif-sqlite';
export const OUTBOUND_THREAD_NAME = 'notif-outbound';

export function nameThisThread(name: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15));
  } catch {
    // Not Linux, or /proc is not mounted: the thread keeps its name.
  }
}
