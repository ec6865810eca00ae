/**
 * The readers waiting for a pull subscription's next rows (a long poll's empty answer, a stream
 * between events): one registry per instance, keyed by subscription. Waiting costs no database
 * work: a waiter is a timer and an entry here, woken when rows of its subscription become
 * readable (this instance's commit, or another instance's NOTIFY), when its time is up, or when
 * its reader goes away. While the PostgreSQL listener is down, fallback-poll.ts asks the database
 * once a second for every waited subscription together.
 */

/** Why a wait ended: rows may be readable, the time is up, the reader left (or stopped waiting), or the server is closing. */
export type WaitEnd = 'woken' | 'timeout' | 'aborted' | 'closing';

export interface Wait {
  ended: Promise<WaitEnd>;
  /** No longer waiting (what it waited for was found meanwhile): the entry goes now. */
  cancel(): void;
}

interface Waiter {
  /** The reader has read up to here: the fallback poll wakes it for anything later. */
  after: number;
  end: (why: WaitEnd) => void;
}

export class PullWaiters {
  private readonly bySubscription = new Map<string, Set<Waiter>>();
  private readonly wakeListeners: Array<(subscription: string | undefined) => void> = [];
  private closing = false;

  /** Tells `listener` of every wake, waiters or none: of one subscription, or of all (undefined). */
  onWake(listener: (subscription: string | undefined) => void): void {
    this.wakeListeners.push(listener);
  }

  /**
   * Waits at most `ms` for rows of `subscription` after `after`. Call it before reading, so that
   * rows made readable during the read wake it (the wait then ends at once). `signal`: the
   * reader left; its entry goes at once.
   */
  wait(subscription: string, after: number, ms: number, signal?: AbortSignal): Wait {
    if (this.closing) return { ended: Promise.resolve('closing'), cancel: () => undefined };
    if (signal?.aborted) return { ended: Promise.resolve('aborted'), cancel: () => undefined };
    let cancel = () => undefined as void;
    const ended = new Promise<WaitEnd>((resolve) => {
      let set = this.bySubscription.get(subscription);
      if (!set) this.bySubscription.set(subscription, (set = new Set()));
      const waiters = set;
      const end = (why: WaitEnd) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (waiters.delete(waiter) && waiters.size === 0 && this.bySubscription.get(subscription) === waiters)
          this.bySubscription.delete(subscription);
        resolve(why);
      };
      const onAbort = () => end('aborted');
      const waiter: Waiter = { after, end };
      const timer = setTimeout(() => end('timeout'), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      waiters.add(waiter);
      cancel = onAbort;
    });
    return { ended, cancel: () => cancel() };
  }

  /** Rows of `subscription` became readable: its waiters read again. */
  wake(subscription: string): void {
    for (const listener of this.wakeListeners) listener(subscription);
    const waiters = this.bySubscription.get(subscription);
    if (!waiters) return;
    for (const waiter of [...waiters]) waiter.end('woken');
  }

  /** Every waiter reads again (notifications may have been missed). */
  wakeAll(): void {
    for (const listener of this.wakeListeners) listener(undefined);
    for (const waiters of [...this.bySubscription.values()]) for (const waiter of [...waiters]) waiter.end('woken');
  }

  /** The server is closing: every wait ends now, and none begins. */
  close(): void {
    this.closing = true;
    for (const waiters of [...this.bySubscription.values()]) for (const waiter of [...waiters]) waiter.end('closing');
  }

  /** For each waited subscription, the lowest cursor its waiters have read up to. */
  waited(): Map<string, number> {
    const lowest = new Map<string, number>();
    for (const [subscription, waiters] of this.bySubscription)
      lowest.set(subscription, Math.min(...[...waiters].map((waiter) => waiter.after)));
    return lowest;
  }

  /** Waiters now (for the metrics, and tests). */
  get size(): number {
    let count = 0;
    for (const waiters of this.bySubscription.values()) count += waiters.size;
    return count;
  }
}
