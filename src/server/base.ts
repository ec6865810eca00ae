import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/settings.js';
import type { DatabaseHandle } from '../db/connect.js';
import type { LiveMatcher } from '../matching/live-matcher.js';
import type { ServiceMetrics } from '../metrics/registry.js';
import type { Clock } from '../time/clock.js';

/** What every builder of the server's parts is given: built first, and used by nearly all. */
export interface ServerBase {
  config: Config;
  log: FastifyBaseLogger;
  database: DatabaseHandle;
  clock: Clock;
  metrics: ServiceMetrics;
  matcher: LiveMatcher;
}
