/**
 * The Fastify application: logging with request ids and no secrets, the body limit, the one
 * error handler (also for what Fastify and Node refuse before any route runs), no query
 * parameter a route does not define, OpenAPI generated from the route schemas, and the routes
 * given to it.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { LogRequests } from '../config/settings.js';
import { DEFAULT_DATABASE_TIMEOUT_MS } from '../db/connect.js';
import { databaseUnavailable, errorBody, serviceError } from '../errors.js';
import type { Metrics } from '../metrics/metrics.js';
import { LOOPBACK_CIDRS, type PeerList, peerList } from '../net/peer-list.js';
import { within } from '../time/within.js';
import { refuseCrossSiteWrites } from './cross-site.js';
import { answerClientError, errorHandler } from './error-handler.js';
import { createLogger } from './logger.js';
import { refuseUnknownQueryParameters } from './query-parameters.js';
import { logRequests, WithoutRequestLines } from './request-log.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** See AppOptions.databaseTimeoutMs. */
    deadline?: false | { extraMs: number };
  }
}

export interface AppOptions {
  maxBodyBytes: number;
  /** The service's logger; or a new one logging from this level on (tests). */
  logger: FastifyBaseLogger | string;
  /** NOTIFICATIONS_LOG_REQUESTS (default: errors). */
  logRequests?: LogRequests;
  version: string;
  /** How long a request may take to arrive whole (default REQUEST_TIMEOUT_MS). */
  requestTimeoutMs?: number;
  /**
   * NOTIFICATIONS_DATABASE_TIMEOUT: a handler that has not answered by then is answered 503
   * (the database is all a handler waits for). Routes with `config: { deadline: false }` are
   * exempt; `config: { deadline: { extraMs } }` gives a route that also waits for something else
   * (a target's consent) that much longer. Default: DEFAULT_DATABASE_TIMEOUT_MS.
   */
  databaseTimeoutMs?: number;
  /** Told of every answered request; none: requests are not counted. */
  metrics?: Pick<Metrics, 'requestAnswered'>;
  /** NOTIFICATIONS_TRUSTED_PROXIES: whose X-Request-Id is kept (default: loopback only). */
  trustedProxies?: PeerList;
}

/**
 * A client that sends less than its Content-Length, or trickles its body, is answered 408 (in
 * our shape, by answerClientError) this long after it began, instead of holding its
 * connection and request forever. A whole 1 MiB body in a minute needs only ~17 KB/s.
 */
const REQUEST_TIMEOUT_MS = 60_000;
/** How often Node looks for requests past their time (its default, 30 s, would add up to that). */
const REQUEST_TIMEOUT_CHECK_MS = 1_000;

/**
 * Node refuses a request line and headers over 16 KiB (431), so no path parameter can be
 * longer than this: every uuid, however long, reaches its route and is answered 404 there like
 * any other unknown subscription (find-my-way's default of 100 answered 414 in its own shape).
 */
const MAX_PARAM_LENGTH = 16 * 1024;

export async function buildApp(
  options: AppOptions,
  routes: Array<(app: FastifyInstance) => Promise<void> | void>,
): Promise<FastifyInstance> {
  const requestTimeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const databaseTimeoutMs = options.databaseTimeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS;
  const handleError = errorHandler(databaseTimeoutMs);
  const trustedProxies = options.trustedProxies ?? peerList(LOOPBACK_CIDRS);
  const app: FastifyInstance = Fastify({
    loggerInstance: typeof options.logger === 'string' ? createLogger(options.logger) : options.logger,
    logController: new WithoutRequestLines(),
    bodyLimit: options.maxBodyBytes,
    // A client's X-Request-Id is taken from a trusted proxy only; anyone else's is replaced.
    requestIdHeader: false,
    genReqId: (raw) => proxiedRequestId(raw, trustedProxies) ?? randomUUID(),
    // Unknown fields are errors, not silently dropped; numbers are not coerced from strings.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    // Fastify's own 503 while closing has no code: the closing hook below answers instead.
    return503OnClosing: false,
    requestTimeout,
    // Node 20 heeds a request time-out only when the server is created with it, not when set
    // afterwards, as Fastify does with its own option.
    http: { requestTimeout, connectionsCheckingInterval: Math.min(REQUEST_TIMEOUT_CHECK_MS, requestTimeout) },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A URL that cannot be decoded (`/eventmatch/%zz`), answered by the router itself.
    frameworkErrors: (error, request, reply) => handleError(error, request, reply),
    // What Node's HTTP parser refuses: there is no request, so the socket is answered directly.
    clientErrorHandler: (error, socket) => answerClientError(error, socket, app.log),
  });
  // Hooks every request passes through take `done` rather than being async: each async hook
  // costs a promise and a turn of the microtask queue per request.
  app.addHook('onSend', (request, reply, payload, done) => {
    void reply.header('x-request-id', request.id);
    done(null, payload);
  });
  logRequests(app, options.logRequests ?? 'errors');
  if (options.metrics) countAnswers(app, options.metrics);
  refuseWhileClosing(app);
  refuseCrossSiteWrites(app);
  refuseUnknownQueryParameters(app);
  app.addHook('onRoute', (route) => {
    const deadline = route.config?.deadline;
    if (deadline === false) return;
    const deadlineMs = databaseTimeoutMs + (deadline?.extraMs ?? 0);
    const handler = route.handler;
    // However the database fails to answer (a connection never made, a statement with no answer,
    // a pool whose connections all wait), the request is answered in time. The handler goes on
    // to its end; what it then says is dropped.
    route.handler = function (this: FastifyInstance, request, reply) {
      return within(Promise.resolve(handler.call(this, request, reply)), deadlineMs, () => databaseUnavailable(databaseTimeoutMs));
    };
  });
  app.addHook('onRoute', (route) => {
    const integers = integerParameters(route.schema?.querystring);
    if (integers.length === 0) return;
    const convert = async (request: FastifyRequest) => numbersFromDigits(request.query as Record<string, unknown>, integers);
    route.preValidation = [...[route.preValidation ?? []].flat(), convert];
  });
  app.setErrorHandler(handleError);
  const allowedMethods = routeMethods(app);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = allowedMethods(path);
    if (allowed.length === 0) {
      const error = serviceError('ROUTE_NOT_FOUND', request.method, path);
      void reply.status(error.statusCode).send(errorBody(error.code, error.message));
      return;
    }
    const error = serviceError('METHOD_NOT_ALLOWED', request.method, path, allowed);
    void reply.status(error.statusCode).header('allow', allowed.join(', ')).send(errorBody(error.code, error.message));
  });
  await app.register(swagger, {
    openapi: {
      info: { title: 'svc-notifications', version: options.version, description: 'Event notification router' },
    },
  });
  for (const register of routes) await register(app);
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}

/** The route label of a request no route serves: one series for them all, whatever the path. */
export const UNMATCHED_ROUTE = '(unmatched)';

/** Labelled by the route's pattern, so that a path's ids and a client's inventions add no series. */
function countAnswers(app: FastifyInstance, metrics: Pick<Metrics, 'requestAnswered'>): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE);
    metrics.requestAnswered(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

/**
 * Once the instance begins to stop, every answer says `Connection: close`, and Node closes its
 * connection after it: a connection kept alive would otherwise hold the stop open until its
 * keep-alive time-out (72 s). A request that still arrives on such a connection (sent before
 * its client read that answer) is answered 503 at once.
 */
function refuseWhileClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', (_request, _reply, done) => {
    if (closing) throw serviceError('SHUTTING_DOWN');
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}

/**
 * The methods routed for a path, for the `Allow` header of a 405: Fastify itself answers a
 * known path asked with another method as if it did not exist (404).
 */
function routeMethods(app: FastifyInstance): (path: string) => string[] {
  const routes: Array<{ pattern: RegExp; methods: string[] }> = [];
  app.addHook('onRoute', (route) => {
    const pattern = route.url
      .split('/')
      .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    routes.push({ pattern: new RegExp(`^${pattern}$`), methods: [route.method].flat() });
  });
  return (path) => {
    const methods = new Set(routes.filter((route) => route.pattern.test(path)).flatMap((route) => route.methods));
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  };
}

/**
 * A query string is text, and Ajv converts nothing (`coerceTypes: false`, so that bodies are
 * taken as sent): the parameters a route's schema declares integer are converted before it is
 * checked, from decimal digits only. Anything else (`ten`, `1.5`, `-1`, ``, a repeated
 * parameter) stays as it is and fails the schema, whose message names the parameter and its bounds.
 */
function integerParameters(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {};
  return Object.keys(properties).filter((name) => properties[name]?.type === 'integer');
}

function numbersFromDigits(query: Record<string, unknown>, names: string[]): void {
  for (const name of names) {
    const value = query[name];
    if (typeof value === 'string' && /^\d{1,16}$/.test(value) && Number.isSafeInteger(Number(value))) query[name] = Number(value);
  }
}

/** The X-Request-Id a trusted proxy sent, or undefined (none, or not from one). */
function proxiedRequestId(raw: IncomingMessage, trustedProxies: PeerList): string | undefined {
  const id = raw.headers['x-request-id'];
  return typeof id === 'string' && id !== '' && trustedProxies.includes(raw.socket.remoteAddress) ? id : undefined;
}
