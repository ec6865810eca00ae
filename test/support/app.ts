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

/** The /eventmatch app listening on a free port of 127.0.0.1, with one subscription of `user`. */
export async function listeningEventmatchApp(
  database: DatabaseHandle,
  user: Record<string, string>,
  subscription: object,
  maxBodyBytes?: number,
): Promise<{ app: FastifyInstance; port: number; uuid: string }> {
  const app = await startEventmatchApp(database, {}, maxBodyBytes);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const uuid = (await app.inject({ method: 'POST', url: '/eventmatch', headers: user, payload: subscription })).json<{ uuid: string }>().uuid;
  return { app, port, uuid };
}
