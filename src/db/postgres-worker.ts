/**
 * The worker thread side of postgres-thread.ts: a pool of its own, and the named operations
 * run in a group commit over it, each answered once its transaction has committed.
 */
import { workerData } from 'node:worker_threads';
import { batchPerTurn } from '../turn-batch.js';
import { POSTGRES_CAPABILITIES } from './capabilities.js';
import {
  type ConnectionFailed,
  describeError,
  reportOpened,
  type ThreadAnswer,
  type ThreadData,
  type ThreadRequest,
} from './database-thread.js';
import { runOperation } from './operations.js';
import { type PostgresConnections, openPostgresPool, type PostgresPoolSettings } from './postgres-pool.js';

const thread = workerData as ThreadData<PostgresPoolSettings>;
const answer = batchPerTurn<ThreadAnswer | ConnectionFailed>((answers) => thread.port.postMessage(answers));

function open(): PostgresConnections | undefined {
  try {
    const connections = openPostgresPool(thread.options, (error) => answer({ connectionError: describeError(error) }));
    reportOpened(thread, { ok: true });
    return connections;
  } catch (error) {
    reportOpened(thread, { ok: false, error: describeError(error) });
    return undefined;
  }
}

async function handle(connections: PostgresConnections, request: ThreadRequest): Promise<ThreadAnswer> {
  try {
    switch (request.kind) {
      case 'perform': {
        const { name, args, options } = request;
        return {
          id: request.id,
          value: await connections.group.run((tx) => runOperation(tx, POSTGRES_CAPABILITIES, name, args as never), options),
        };
      }
      case 'close':
        await connections.db.destroy();
        return { id: request.id, changes: 0 };
      default:
        throw new Error(`the PostgreSQL thread runs operations only, not ${request.kind}`);
    }
  } catch (error) {
    return { id: request.id, error: describeError(error) };
  }
}

const connections = open();
if (connections) {
  thread.port.on('message', (requests: ThreadRequest[]) => {
    for (const request of requests) void handle(connections, request).then(answer);
  });
}
