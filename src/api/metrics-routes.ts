/**
 * `GET /metrics`: the instance's registry in the Prometheus text format. Open, like /healthz:
 * it shows counts and ages, never events, users or targets.
 */
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';

export interface MetricsRouteDependencies {
  registry: Registry;
}

export function metricsRoutes(deps: MetricsRouteDependencies) {
  return (app: FastifyInstance) => {
    app.get(
      '/metrics',
      { schema: { tags: ['operations'], summary: 'Prometheus metrics (text format 0.0.4)' } },
      async (_request, reply) => {
        const body = await deps.registry.metrics();
        return reply.header('content-type', deps.registry.contentType).send(body);
      },
    );
  };
}
