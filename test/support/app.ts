import { after, before } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { type AppOptions, buildApp } from '../../src/api/app.js';
import { deliveriesRoutes } from '../../src/api/deliveries-routes.js';
import { type EventmatchDependencies, eventmatchRoutes } from '../../src/api/eventmatch-routes.js';
import { eventsRoutes } from '../../src/api/pull-events-routes.js';
import { pullReader } from '../../src/pull/reader.js';
import { sharedReads } from '../../src/pull/shared-reads.js';
import { PullWaiters } from '../../src/pull/waiters.js';
import type { IdentityOptions } from '../../src/api/identity.js';
import { receiveRoutes } from '../../src/api/receive-routes.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { EventLogBatch } from '../../src/receive/event-log-batch.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import type { PeerList } from '../../src/net/peer-list.js';
import { systemClock } from '../../src/time/clock.js';
import { openTestDatabase, type TestBackend, type TestDatabase } from './database.js';
import { defaultTargetGuard } from './target-guard.js';

const IDENTITY = { header: 'http-remote-user', defaultUser: null };

function eventmatchDependencies(database: DatabaseHandle, overrides: Partial<EventmatchDependencies>): EventmatchDependencies {
  return {
    database,
    clock: systemClock(),
    secretKey: null,
    dialectMode: 'auto',
    // The service's default: every test that creates counts against it, on both databases.
    userSubscriptions: 1000,
    targetGuard: defaultTargetGuard(),
    identity: IDENTITY,
    ...overrides,
  };
}

/** The app with the subscription routes, silent, as the server would build it; for `inject`. */
export function startEventmatchApp(
  database: DatabaseHandle,
  overrides: Partial<EventmatchDependencies> = {},
  maxBodyBytes = 1024 * 1024,
): Promise<FastifyInstance> {
  return buildApp({ maxBodyBytes, logger: 'silent', version: 'test' }, [eventmatchRoutes(eventmatchDependencies(database, overrides))]);
}

export interface ApiAppOptions {
  app?: Partial<AppOptions>;
  eventmatch?: Partial<EventmatchDependencies>;
  /** NOTIFICATIONS_RECEIVE_TOKEN; none by default. */
  receiveToken?: string | null;
  /** NOTIFICATIONS_RECEIVE_ALLOW; any peer by default. */
  receiveAllow?: PeerList | null;
  /** For the subscription and the delivery routes alike. */
  identity?: Partial<IdentityOptions>;
  /** The most deliveries one recover queues again; the service's RECOVER_LIMIT by default. */
  recoverLimit?: number;
  /** More routes (health, metrics, the console…), registered first: a hook among them sees the API's routes too. */
  routes?: Array<(app: FastifyInstance) => Promise<void> | void>;
}

/**
 * The app with every API route (subscriptions, their deliveries and pull events, /receive) on one database,
 * silent, as the server builds it, its matcher following the subscription writes; for `inject`.
 */
export function startApiApp(database: DatabaseHandle, options: ApiAppOptions = {}): Promise<FastifyInstance> {
  const clock = systemClock();
  const matcher = new LiveMatcher();
  const waiters = new PullWaiters();
  const pullReads = sharedReads(pullReader({ database, clock, databaseTimeoutMs: 5_000 }), waiters);
  const identity = { ...IDENTITY, ...options.identity };
  return buildApp({ maxBodyBytes: 1024 * 1024, logger: 'silent', version: 'test', ...options.app }, [
    ...(options.routes ?? []),
    eventmatchRoutes(
      eventmatchDependencies(database, {
        clock,
        identity,
        onChange: (change) => {
          matcher.apply(change);
          pullReads.subscriptionChanged(change);
        },
        ...options.eventmatch,
      }),
    ),
    deliveriesRoutes({ database, clock, identity, ...(options.recoverLimit === undefined ? {} : { recoverLimit: options.recoverLimit }) }),
    eventsRoutes({ reader: pullReads, waiters, identity }),
    receiveRoutes({
      eventLog: new EventLogBatch(database),
      matcher,
      clock,
      receiveToken: options.receiveToken ?? null,
      receiveAllow: options.receiveAllow ?? null,
      onReceived: () => undefined,
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

/** An app built on a suite's own database, for `inject`; see `appOn`. */
export interface AppOnDatabase {
  readonly inject: FastifyInstance['inject'];
  /** The suite's database, opened in the test process (the app's own handle). */
  readonly handle: DatabaseHandle;
  readonly database: TestDatabase;
}

/**
 * For a describe block (`describeOn(backend, …)`): a `before` hook that opens a fresh database of
 * `backend` and builds the app on it with `build`, and an `after` hook that closes both. The set-up
 * the in-process API suites share, kept in one place like `serverOn` for the built server.
 */
export function appOn(backend: TestBackend, build: (db: DatabaseHandle) => Promise<FastifyInstance>): AppOnDatabase {
  let test: Awaited<ReturnType<typeof openTestDatabase>> | undefined;
  let app: FastifyInstance | undefined;
  const opened = () => {
    if (!test || !app) throw new Error('appOn: the app is built in a before hook; use it in a test or a later hook');
    return { test, app };
  };
  before(async () => {
    test = await openTestDatabase(backend);
    app = await build(test.handle);
  });
  after(async () => {
    await app?.close();
    await test?.close();
  });
  return {
    get inject() {
      const { app } = opened();
      return app.inject.bind(app);
    },
    get handle() {
      return opened().test.handle;
    },
    get database() {
      return opened().test.database;
    },
  };
}
