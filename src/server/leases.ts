/** This instance's leases on the queue's rows: their holder's name, and giving them back at the end. */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { DatabaseHandle } from '../db/connect.js';
import { releaseLeasesOf } from '../db/stores/matches.js';
import { within } from '../time/within.js';
import type { Tracing } from '../tracing/tracing.js';
import type { Part } from './lifecycle.js';

/**
 * How long an exit past the shutdown grace waits for the database to take the leases back: the
 * grace is what a supervisor (docker stop, systemd) is told, and it stops waiting soon after.
 */
export const RELEASE_AT_EXIT_MS = 1_000;

export function leaseHolder(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** Stopped once the runners have stopped and every outcome is recorded: what is left leased goes back to the queue. */
export function leaseRelease(database: DatabaseHandle, holder: string): Part {
  return {
    name: 'leases',
    stop: async () => {
      await releaseLeasesOf(database, holder);
    },
  };
}

/**
 * Past the grace, what is still in flight is given back to the queue, to be made again; the
 * spans of what ended meanwhile are exported in the same second.
 */
export function abandonInFlight(options: {
  database: DatabaseHandle;
  holder: string;
  tracing: Tracing | undefined;
  log: FastifyBaseLogger;
}): () => Promise<void> {
  const { database, holder, tracing, log } = options;
  return async () => {
    const flushed =
      tracing && within(tracing.shutdown(), RELEASE_AT_EXIT_MS, () => new Error('spans not exported in time')).catch(() => {});
    const released = await within(
      releaseLeasesOf(database, holder),
      RELEASE_AT_EXIT_MS,
      () => new Error(`the database did not answer within ${RELEASE_AT_EXIT_MS} ms`),
    );
    log.warn({ released }, 'released the rows still in flight: they will be delivered again');
    await flushed;
  };
}
