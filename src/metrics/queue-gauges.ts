/**
 * The queue gauges, read from the database when scraped (the match rows are shared by every
 * instance on PostgreSQL, so each instance reports the whole queue, not its own part).
 */
import { Gauge, type Registry } from 'prom-client';
import type { Clock } from '../time/clock.js';
import { readWithinScrape } from './scrape-read.js';

export interface QueueReader {
  /** Rows per unfinished state. */
  depth(): Promise<ReadonlyMap<string, number>>;
  /** The `created` (µs since the epoch) of each unfinished state's oldest row; undefined when none. */
  oldestCreated(): Promise<ReadonlyMap<string, number | undefined>>;
}

export interface QueueGaugeOptions {
  reader: QueueReader;
  clock: Clock;
  /** A scrape could not read the database: those gauges have no samples in that scrape. */
  onError: (error: unknown) => void;
}

export function registerQueueGauges(registry: Registry, options: QueueGaugeOptions): void {
  const { reader, clock, onError } = options;
  new Gauge({
    name: 'notifications_queue_depth',
    help: 'Match rows waiting in each unfinished state (policy: for the policy service; deliver: for their target), read from the database at scrape time.',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      try {
        const depth = await readWithinScrape(() => reader.depth());
        this.reset();
        for (const [state, rows] of depth) this.set({ state }, rows);
      } catch (error) {
        this.reset();
        onError(error);
      }
    },
  });
  new Gauge({
    name: 'notifications_queue_oldest_pending_age_seconds',
    help: 'Age of the oldest match row in each unfinished state, since it was created; 0 when the state has none.',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      try {
        const oldest = await readWithinScrape(() => reader.oldestCreated());
        const now = clock();
        this.reset();
        // Another instance's clock may run ahead of this one's: never a negative age.
        for (const [state, created] of oldest) this.set({ state }, created === undefined ? 0 : Math.max(0, now - created) / 1e6);
      } catch (error) {
        this.reset();
        onError(error);
      }
    },
  });
}
