/**
 * `/healthz`: the process answers. `/readyz`: the database answers, its schema is current,
 * and which policy mode is in force (allow-all is said out loud: it shows every event to
 * every subscriber).
 */
import type { FastifyInstance } from 'fastify';
import type { DatabaseHandle } from '../db/connect.js';
import { schemaStatus } from '../db/migrate.js';

export interface HealthDependencies {
  database: DatabaseHandle;
  policyMode: 'allow-all' | 'policy-service';
}

export function healthRoutes(deps: HealthDependencies) {
  return (app: FastifyInstance) => {
    app.get('/healthz', { schema: { tags: ['operations'], summary: 'The process is alive' } }, async () => ({ status: 'ok' }));

    app.get('/readyz', { schema: { tags: ['operations'], summary: 'Database reachable, schema current, policy mode' } }, async (request, reply) => {
      const report: Record<string, string> = { policy: deps.policyMode };
      let ready = true;
      try {
        // Reading the schema's version is also the reachability check.
        const status = await schemaStatus(deps.database);
        report['database'] = 'ok';
        report['schema'] = status.pending.length === 0 ? 'current' : `out of date: run svc-notifications-cmd dbsync`;
        ready = status.pending.length === 0;
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check: database unreachable');
        report['database'] = 'unreachable';
        ready = false;
      }
      return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', ...report });
    });
  };
}
