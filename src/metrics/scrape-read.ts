/**
 * A read of the database made while a scrape waits: bounded, since a scrape must not wait on a
 * database that does not answer. Prometheus gives up on the whole scrape (process metrics and
 * counters too) after 10 s by default.
 */
import { within } from '../time/within.js';

export const SCRAPE_READ_TIMEOUT_MS = 2_000;

export function readWithinScrape<T>(read: () => Promise<T>): Promise<T> {
  return within(read(), SCRAPE_READ_TIMEOUT_MS, () => new Error(`the database did not answer within ${SCRAPE_READ_TIMEOUT_MS} ms`));
}
