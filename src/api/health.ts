/**
 * `/healthz`: the process answers. `/readyz`: the database answers and takes writes (not
 * `full`: a write refused for lack of space, none succeeded since), its schema is current,
 * and which policy mode is in force (allow-all is said out loud: it shows every event to
 * every subscriber).
 */
import type { FastifyInstance } from 'fastify';
import type { DatabaseHandle } from '../db/connect.js';
import { schemaStatus } from '../db/migrate.js';
import { within } from '../time/within.js';

export interface HealthDependencies {
  database: DatabaseHandle;
  policyMode: 'allow-all' | 'policy-service';
}

/**
 * A probe (a load balancer, Kubernetes) gives up after a few seconds; a database that does
 * not answer would otherwise hold /readyz for the pool's 10 s connect time-out, or for ever on
 * a connection whose peer went silent. Two seconds is far above a healthy answer (~1 ms).
 */
const READINESS_TIMEOUT_MS = 2_000;

class NoAnswer extends Error {}

export function healthRoutes(deps: HealthDependencies) {
  return (app: FastifyInstance) => {
    app.get('/healthz', { config: { deadline: false }, schema: { tags: ['operations'], summary: 'The process is alive' } }, async () => ({
      status: 'ok',
    }));

    app.get(
      '/readyz',
      {
        config: { deadline: false },
        schema: { tags: ['operations'], summary: 'Database reachable and not full, schema current, policy mode' },
      },
      async (request, reply) => {
        const report: Record<string, string> = { policy: deps.policyMode };
        let ready = true;
        try {
          // Reading the schema's version is also the reachability check.
          const status = await within(
            schemaStatus(deps.database),
            READINESS_TIMEOUT_MS,
            () => new NoAnswer(`the database did not answer within ${READINESS_TIMEOUT_MS} ms`),
          );
          const full = deps.database.storage.full;
          report.database = full ? 'full' : 'ok';
          report.schema = status.pending.length === 0 ? 'current' : `out of date: run svc-notifications-cmd dbsync`;
          ready = status.pending.length === 0 && !full;
        } catch (error) {
          request.log.warn(
            { err: error },
            error instanceof NoAnswer ? 'readiness check: database not answering' : 'readiness check: database unreachable',
          );
          report.database = 'unreachable';
          ready = false;
        }
        return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', ...report });
      },
    );
  };
}
