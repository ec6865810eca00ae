/**
 * The subscription and pull routes in-process, listening on a free port of 127.0.0.1, the pull
 * reader's statements counted (a Kysely plugin on its connection) with the most in flight at
 * once, and the calls that reach the reader (under the sharing) with their cursors: what
 * readers cost the database can be seen. For the pull tests.
 */
import type { FastifyInstance } from 'fastify';
import type { KyselyPlugin } from 'kysely';
import { buildApp } from '../../src/api/app.js';
import { eventmatchRoutes } from '../../src/api/eventmatch-routes.js';
import { eventsRoutes } from '../../src/api/pull-events-routes.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { type PullReader, pullReader } from '../../src/pull/reader.js';
import { sharedReads } from '../../src/pull/shared-reads.js';
import type { PullWaiters } from '../../src/pull/waiters.js';
import { systemClock } from '../../src/time/clock.js';
import { defaultTargetGuard } from './target-guard.js';

const IDENTITY = { header: 'http-remote-user', defaultUser: null };

export interface PullApp {
  app: FastifyInstance;
  url: string;
  /** Statements the pull reader has sent so far. */
  statements(): number;
  /** The most statements of the pull reader that were in flight at once so far. */
  mostInFlight(): number;
  /** The calls that reached the pull reader so far (made by the routes, after their sharing), with their cursors. */
  calls(): ReaderCall[];
  /** Calls of the pull reader not settled yet. */
  outstanding(): number;
  /** A new pull subscription of `user`; its uuid. */
  subscribe(user: string): Promise<string>;
}

export interface ReaderCall {
  operation: 'read' | 'acknowledge';
  cursor: number;
}

export interface PullAppOptions {
  requestTimeoutMs?: number;
  streamKeepAliveMs?: number;
}

export async function startPullApp(database: DatabaseHandle, waiters: PullWaiters, options: PullAppOptions = {}): Promise<PullApp> {
  let statements = 0;
  let inFlight = 0;
  let mostInFlight = 0;
  const counter: KyselyPlugin = {
    transformQuery: (args) => {
      statements++;
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      return args.node;
    },
    transformResult: async (args) => {
      inFlight--;
      return args.result;
    },
  };
  const calls: ReaderCall[] = [];
  let outstanding = 0;
  const track = <T>(call: ReaderCall, work: Promise<T>) => {
    calls.push(call);
    outstanding++;
    return work.finally(() => outstanding--);
  };
  const counted: DatabaseHandle = { ...database, db: database.db.withPlugin(counter) };
  const clock = systemClock();
  // As the server composes it: the routes' reads shared, the calls that reach the database tracked.
  const reader = sharedReads(trackedReader(pullReader({ database: counted, clock, databaseTimeoutMs: 5_000 }), track), waiters);
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
        onChange: (change) => reader.subscriptionChanged(change),
      }),
      eventsRoutes({
        reader,
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
    mostInFlight: () => mostInFlight,
    calls: () => [...calls],
    outstanding: () => outstanding,
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

function trackedReader(reader: PullReader, track: <T>(call: ReaderCall, work: Promise<T>) => Promise<T>): PullReader {
  return {
    subscription: (owner, uuid) => reader.subscription(owner, uuid),
    read: (subscription, after, limit) => track({ operation: 'read', cursor: after }, reader.read(subscription, after, limit)),
    acknowledge: (subscription, cursor) => track({ operation: 'acknowledge', cursor }, reader.acknowledge(subscription, cursor)),
  };
}
