/** What the server reports of itself: traces, when the environment asks for them, and metrics. */
import type { FastifyBaseLogger } from 'fastify';
import type { DatabaseHandle } from '../db/connect.js';
import { ping } from '../db/ping.js';
import { queueReader } from '../db/stores/queue-stats.js';
import { createMetrics, type ServiceMetrics } from '../metrics/registry.js';
import { packageInfo } from '../package-info.js';
import type { Clock } from '../time/clock.js';
import { startTracing, type Tracing, TracingConfigError } from '../tracing/tracing.js';
import { PROGRAM } from './program.js';

/**
 * Traces as the OTEL_* environment variables configure them (tracing/tracing.ts): undefined when
 * they set no endpoint, null (and said why) when they cannot be used.
 */
export async function tracingFromEnvironment(log: FastifyBaseLogger): Promise<Tracing | undefined | null> {
  try {
    return await startTracing(process.env, {
      service: { name: PROGRAM, version: packageInfo().version },
      warn: (message) => log.warn({ error: message }, 'traces: the OpenTelemetry SDK reports a problem (spans may be lost)'),
    });
  } catch (error) {
    if (!(error instanceof TracingConfigError)) throw error;
    console.error(`${PROGRAM}: ${error.message}`);
    return null;
  }
}

/** The metrics, with the queue read from the database and whether it answers. */
export function serverMetrics(database: DatabaseHandle, clock: Clock, log: FastifyBaseLogger): ServiceMetrics {
  return createMetrics({
    queue: {
      reader: queueReader(database.db),
      clock,
      onError: (error) => log.warn({ err: error }, 'metrics: cannot read the queue from the database'),
    },
    databasePing: () => ping(database.db),
  });
}
