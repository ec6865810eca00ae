/**
 * The subscription and pull routes in-process, listening on a free port of 127.0.0.1, the pull
 * reader's statements counted (a Kysely plugin on its connection): what waiting readers cost
 * the database can be seen. For the pull tests.
 */
import type { FastifyInstance } from 'fastify';
import type { KyselyPlugin } from 'kysely';
import { buildApp } from '../../src/api/app.js';
import { eventmatchRoutes } from '../../src/api/eventmatch-routes.js';
import { eventsRoutes } from '../../src/api/events-routes.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { pullReader } from '../../src/pull/reader.js';
import type { PullWaiters } from '../../src/pull/waiters.js';
import { systemClock } from '../../src/time/clock.js';
import { defaultTargetGuard } from './target-guard.js';

const IDENTITY = { header: 'http-remote-user', defaultUser: null };

export interface PullApp {
  app: FastifyInstance;
  url: string;
  /** Statements the pull reader has sent so far. */
  statements(): number;
  /** A new pull subscription of `user`; its uuid. */
  subscribe(user: string): Promise<string>;
}

export interface PullAppOptions {
  requestTimeoutMs?: number;
  streamKeepAliveMs?: number;
}

export async function startPullApp(database: DatabaseHandle, waiters: PullWaiters, options: PullAppOptions = {}): Promise<PullApp> {
  let statements = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => {
      statements++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  const counted: DatabaseHandle = { ...database, db: database.db.withPlugin(counter) };
  const clock = systemClock();
  const app = await buildApp(
    {
      maxBodyBytes: 1 << 20,
      logger: 'silent',
      version: 'test',
      ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
    },
    [
      eventmatchRoutes({
        database,
        clock,
        secretKey: null,
        dialectMode: 'auto',
        userSubscriptions: 1000,
        targetGuard: defaultTargetGuard(),
        identity: IDENTITY,
      }),
      eventsRoutes({
        reader: pullReader({ database: counted, clock, databaseTimeoutMs: 5_000 }),
        waiters,
        identity: IDENTITY,
        ...(options.streamKeepAliveMs === undefined ? {} : { streamKeepAliveMs: options.streamKeepAliveMs }),
      }),
    ],
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    app,
    url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
    statements: () => statements,
    subscribe: async (user) => {
      const created = await app.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: { 'http-remote-user': user },
        payload: { name: 'p', jsonpath: '$', delivery: 'pull' },
      });
      return created.json<{ uuid: string }>().uuid;
    },
  };
}
