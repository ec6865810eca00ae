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
import { type ErrorResponse, errorResponses, withErrorResponses } from './error-responses.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const OWN_SITES = new Set(['same-origin', 'none']);

const CROSS_SITE = "Sent by a browser for another site's page (Sec-Fetch-Site)";
const FORBIDDEN = errorResponses(['CROSS_SITE_REQUEST'], () => CROSS_SITE);

export function refuseCrossSiteWrites(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if ([route.method].flat().every((method) => SAFE_METHODS.has(method))) return;
    const response = route.schema?.response as Record<number, ErrorResponse> | undefined;
    route.schema = { ...route.schema, response: withErrorResponses(response, FORBIDDEN) };
  });
  app.addHook('onRequest', (request, _reply, done) => {
    const site = request.headers['sec-fetch-site'];
    if (site !== undefined && !OWN_SITES.has(site) && !SAFE_METHODS.has(request.method)) throw serviceError('CROSS_SITE_REQUEST', site);
    done();
  });
}
