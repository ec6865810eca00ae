/**
 * While the PostgreSQL listener is down, other instances' NOTIFYs go unheard: once a second, one
 * statement asks for the latest readable cursor of every subscription that has waiters, and
 * wakes those with something after what their waiters have read. Listening, or with no waiter,
 * it asks nothing.
 */
import type { Kysely } from 'kysely';
import { latestCursors } from '../db/stores/pull.js';
import type { Database } from '../db/tables.js';
import type { PullWaiters } from './waiters.js';

export const FALLBACK_POLL_MS = 1_000;

export interface FallbackPollOptions {
  db: Kysely<Database>;
  waiters: PullWaiters;
  /** Whether notifications flow now. */
  listening: () => boolean;
  onError: (error: unknown) => void;
  pollMs?: number;
}

export function startFallbackPoll(options: FallbackPollOptions): { stop(): void } {
  let running = false;
  const timer = setInterval(() => {
    if (running || options.listening()) return;
    const waited = options.waiters.waited();
    if (waited.size === 0) return;
    running = true;
    latestCursors(options.db, [...waited.keys()])
      .then((latest) => {
        for (const [subscription, cursor] of latest) if (cursor > (waited.get(subscription) ?? cursor)) options.waiters.wake(subscription);
      }, options.onError)
      .finally(() => (running = false));
  }, options.pollMs ?? FALLBACK_POLL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
