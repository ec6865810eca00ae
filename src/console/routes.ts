/**
 * `/console/`: the web console, served by the service itself. Every file comes from here (no
 * CDN, font or third-party script) and none holds user data: the page asks the API for the
 * caller's own, with the identity the front proxy sets on those calls as on any other. So the
 * files themselves need no identity, and a caller without one sees the console say so.
 *
 * Each answer carries headers that keep the page to itself: scripts, styles, images and API
 * calls from this origin only, no inline script or style, no framing, no sniffing, no referrer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, serviceError } from '../errors.js';
import type { ConsoleAssets } from './assets.js';

export const CONSOLE_PATH = '/console/';

/**
 * `default-src 'none'` and each kind the console uses allowed from this origin only. No
 * 'unsafe-inline' anywhere: the page has no inline script, style or event handler attribute.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  // frame-ancestors for browsers that predate it.
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  // Asked again each time (answered 304 while unchanged), so a new version is seen at once.
  'cache-control': 'no-cache',
};

export interface ConsoleOptions {
  /** The files, or why there are none (the console was not built): /console/ then answers 404 with the reason logged. */
  assets: ConsoleAssets | Error;
}

export function consoleRoutes(options: ConsoleOptions) {
  return (app: FastifyInstance) => {
    const { assets } = options;
    if (assets instanceof Error) app.log.warn({ error: assets.message }, 'the web console is not served');
    // Files answer at once: the database time-out (app.ts) does not apply. Not part of the API's description.
    // Any query string is taken (query-parameters.ts): a link or a cache-buster may add one, and the files are the same whatever it says.
    // Relative, so that it still leads to the console behind a proxy that serves the API under a prefix.
    app.get('/console', { config: { deadline: false, anyQuery: true }, schema: { hide: true } }, async (_request, reply) =>
      reply.code(308).headers(CONSOLE_HEADERS).header('location', 'console/').send(),
    );

    app.get(`${CONSOLE_PATH}*`, { config: { deadline: false, anyQuery: true }, schema: { hide: true } }, async (request, reply) => {
      const asset = assets instanceof Error ? undefined : assets.get((request.params as { '*': string })['*']);
      if (asset === undefined) return notFound(request, reply);
      void reply.headers(CONSOLE_HEADERS).header('etag', asset.etag).type(asset.type);
      if (matches(request.headers['if-none-match'], asset.etag)) return reply.code(304).send();
      return reply.send(asset.body);
    });
  };
}

/** If-None-Match lists validators (a weak one compares by its value, as RFC 9110 says for it). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const value = tag.trim().replace(/^W\//, '');
    return value === etag || value === '*';
  });
}

/** The same answer as any unknown path (app.ts), with the console's headers. */
function notFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = request.url.split('?')[0] ?? '';
  const error = serviceError('ROUTE_NOT_FOUND', request.method, path);
  return reply.code(error.statusCode).headers(CONSOLE_HEADERS).send(errorBody(error.code, error.message));
}
