/**
 * One rule for query strings, on every route: a parameter the route does not define is refused
 * (400 QUERY_PARAMETER_INVALID, `querystring: unknown field "x"`) by the route's schema, before
 * the route acts. A route that declares no query string takes none; a route's own declaration
 * takes only what it names. Each route's description in /openapi.json lists the code.
 *
 * A route that must take any query string says so with `config: { anyQuery: true }`: the
 * console's files, which are the same whatever the query and act on nothing (see docs/api.md).
 */
import type { FastifyInstance } from 'fastify';
import { type ErrorResponse, errorResponses, withErrorResponses } from './error-responses.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes any query parameter (and reads none). */
    anyQuery?: true;
  }
}

const REFUSED = errorResponses(['QUERY_PARAMETER_INVALID'], () => 'A query parameter the route does not define; nothing was done');

export function refuseUnknownQueryParameters(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (route.config?.anyQuery === true) return;
    const declared = route.schema?.querystring as Record<string, unknown> | undefined;
    const response = route.schema?.response as Record<number, ErrorResponse> | undefined;
    route.schema = {
      ...route.schema,
      querystring: { type: 'object', properties: {}, ...declared, additionalProperties: false },
      response: withErrorResponses(response, REFUSED),
    };
  });
}
