/**
 * A page of another site can make a browser send a request here: a form's POST needs no custom
 * header and no JSON, and the front proxy adds the identity of the user whose browser it is. The
 * routes that take no body (rotating a secret, retrying a delivery) would then act for that user.
 * Browsers say where a request comes from in `Sec-Fetch-Site`: a request that changes something
 * is refused unless it comes from this origin's own pages (the console) or from the user
 * (`none`: typed, bookmarked). Clients that are not browsers send no such header.
 */
import type { FastifyInstance } from 'fastify';
import { serviceError } from '../errors.js';
import { type ErrorResponse, errorResponses } from './error-responses.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const OWN_SITES = new Set(['same-origin', 'none']);

const CROSS_SITE = "Sent by a browser for another site's page (Sec-Fetch-Site)";
const FORBIDDEN = errorResponses(['CROSS_SITE_REQUEST'], () => CROSS_SITE);

/** A route's documented answers with CROSS_SITE_REQUEST among its 403s, beside any 403 of its own. */
function withCrossSite(responses: Record<number, ErrorResponse> | undefined): Record<number, ErrorResponse> {
  const own = responses?.[403];
  if (own === undefined) return { ...responses, ...FORBIDDEN };
  const codes = [...own.properties.code.enum, 'CROSS_SITE_REQUEST' as const];
  const description = `${own.description.replace(/\. code: .*$/, '')}; or sent by a browser for another site's page. code: ${codes.join(', ')}`;
  return { ...responses, 403: { ...own, description, properties: { ...own.properties, code: { ...own.properties.code, enum: codes } } } };
}

export function refuseCrossSiteWrites(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if ([route.method].flat().every((method) => SAFE_METHODS.has(method))) return;
    route.schema = { ...route.schema, response: withCrossSite(route.schema?.response as Record<number, ErrorResponse> | undefined) };
  });
  app.addHook('onRequest', async (request) => {
    if (SAFE_METHODS.has(request.method)) return;
    const site = request.headers['sec-fetch-site'];
    if (site === undefined || OWN_SITES.has(site)) return;
    throw serviceError('CROSS_SITE_REQUEST', site);
  });
}
