import { after, before } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { type EventmatchDependencies, eventmatchRoutes } from '../../src/api/eventmatch-routes.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { systemClock } from '../../src/time/clock.js';
import { openTestDatabase, type TestBackend } from './database.js';
import { defaultTargetGuard } from './target-guard.js';

/** The app with the subscription routes, silent, as the server would build it; for `inject`. */
export function startEventmatchApp(
  database: DatabaseHandle,
  overrides: Partial<EventmatchDependencies> = {},
  maxBodyBytes = 1024 * 1024,
): Promise<FastifyInstance> {
  return buildApp({ maxBodyBytes, logger: 'silent', version: 'test' }, [
    eventmatchRoutes({
      database,
      clock: systemClock(),
      secretKey: null,
      dialectMode: 'auto',
      targetGuard: defaultTargetGuard(),
      identity: { header: 'http-remote-user', defaultUser: null },
      ...overrides,
    }),
  ]);
}

/** The /eventmatch app listening on a free port of 127.0.0.1, with one subscription. */
export interface ServedEventmatchApp {
  app: FastifyInstance;
  port: number;
  /** The subscription's. */
  uuid: string;
}

/**
 * For a describe block: before its tests, a fresh database of `backend` and the /eventmatch app
 * listening on it with one subscription of `user`; after them, both closed. The fields are set
 * once the tests run.
 */
export function servedEventmatchApp(
  backend: TestBackend,
  user: Record<string, string>,
  subscription: object,
  maxBodyBytes?: number,
): ServedEventmatchApp {
  const served = {} as ServedEventmatchApp;
  let test: Awaited<ReturnType<typeof openTestDatabase>>;
  before(async () => {
    test = await openTestDatabase(backend);
    served.app = await startEventmatchApp(test.handle, {}, maxBodyBytes);
    await served.app.listen({ port: 0, host: '127.0.0.1' });
    served.port = (served.app.server.address() as { port: number }).port;
    served.uuid = (await served.app.inject({ method: 'POST', url: '/eventmatch', headers: user, payload: subscription })).json<{
      uuid: string;
    }>().uuid;
  });
  after(async () => {
    await served.app?.close();
    await test?.close();
  });
  return served;
}
