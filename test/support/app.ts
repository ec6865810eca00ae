import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { eventmatchRoutes, type EventmatchDependencies } from '../../src/api/eventmatch-routes.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { systemClock } from '../../src/time/clock.js';

/** The app with the subscription routes, silent, as the server would build it; for `inject`. */
export function startEventmatchApp(
  database: DatabaseHandle,
  overrides: Partial<EventmatchDependencies> = {},
  maxBodyBytes = 1024 * 1024,
): Promise<FastifyInstance> {
  return buildApp({ maxBodyBytes, logLevel: 'silent', version: 'test' }, [
    eventmatchRoutes({
      database,
      clock: systemClock(),
      secretKey: null,
      dialectMode: 'auto',
      identity: { header: 'http-remote-user', defaultUser: null },
      ...overrides,
    }),
  ]);
}
