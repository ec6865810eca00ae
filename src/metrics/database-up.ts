/**
 * Whether the database answers, asked at each scrape. The queue gauges say it too, by having no
 * samples, but an absence cannot be aggregated across instances nor compared in a rule; a 0 can.
 */
import { Gauge, type Registry } from 'prom-client';
import { readWithinScrape, SCRAPE_READ_TIMEOUT_MS } from './scrape-read.js';

/** The least a database can be asked: a trivial statement, which settles once it has answered. */
export type DatabasePing = () => Promise<unknown>;

export function registerDatabaseUp(registry: Registry, ping: DatabasePing): void {
  new Gauge({
    name: 'notifications_database_up',
    help: `Whether the database answered a trivial statement at this scrape within ${SCRAPE_READ_TIMEOUT_MS / 1000} s (1), or failed or did not answer (0).`,
    registers: [registry],
    async collect() {
      try {
        await readWithinScrape(ping);
        this.set(1);
      } catch {
        // Why is logged by the queue gauges, which fail in the same scrape.
        this.set(0);
      }
    },
  });
}
