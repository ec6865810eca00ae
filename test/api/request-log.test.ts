/**
 * NOTIFICATIONS_LOG_REQUESTS on a real server: off, no line for any request; errors (the
 * default), one line for a request answered 4xx or 5xx and none for the others; all, one line
 * for each. Never Fastify's own two ("incoming request", "request completed").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventually } from '../support/http-stub.js';
import { startServer } from '../support/processes.js';

interface LogLine {
  msg: string;
  reqId?: string;
  [field: string]: unknown;
}

/** The lines of a request answered 200 and of one answered 404, read once the server has said it stops (all before are in then). */
async function linesOf(env: Record<string, string>): Promise<{ ok: LogLine[]; notFound: LogLine[]; logs: string }> {
  const server = await startServer({ NOTIFICATIONS_DATABASE_URL: 'sqlite::memory:', ...env });
  let logs: string;
  const ids: string[] = [];
  try {
    for (const path of ['/healthz', '/nowhere']) {
      const response = await fetch(`${server.url}${path}`);
      await response.arrayBuffer();
      assert.equal(response.status, path === '/healthz' ? 200 : 404);
      ids.push(response.headers.get('x-request-id') ?? '');
    }
  } finally {
    assert.equal(await server.stop(), 0);
    await eventually(() => server.logs().includes('shutting down'), 'the server says it stops');
    logs = server.logs();
  }
  const lines = logs
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
  const of = (id: string) => lines.filter((line) => line.reqId === id);
  return { ok: of(ids[0]!), notFound: of(ids[1]!), logs };
}

describe('NOTIFICATIONS_LOG_REQUESTS', () => {
  it('off: no line for any request', async () => {
    const { ok, notFound, logs } = await linesOf({ NOTIFICATIONS_LOG_REQUESTS: 'off' });
    assert.deepEqual([ok, notFound], [[], []]);
    assert.doesNotMatch(logs, /incoming request|request completed|request answered/);
  });

  for (const env of [{ NOTIFICATIONS_LOG_REQUESTS: 'errors' }, {}] as Array<Record<string, string>>) {
    it(`errors${'NOTIFICATIONS_LOG_REQUESTS' in env ? '' : ' (the default)'}: one line for the 404, none for the 200`, async () => {
      const { ok, notFound, logs } = await linesOf(env);
      assert.deepEqual(ok, []);
      assert.equal(notFound.length, 1, JSON.stringify(notFound));
      const [line] = notFound;
      assert.equal(line!.msg, 'request answered');
      assert.equal(line!.method, 'GET');
      assert.equal(line!.url, '/nowhere');
      assert.equal(line!.statusCode, 404);
      assert.equal(typeof line!.responseTimeMs, 'number');
      assert.doesNotMatch(logs, /incoming request|request completed/);
    });
  }

  it('all: one line for each request', async () => {
    const { ok, notFound, logs } = await linesOf({ NOTIFICATIONS_LOG_REQUESTS: 'all' });
    assert.deepEqual(
      [...ok, ...notFound].map((line) => [line.msg, line.method, line.url, line.statusCode]),
      [
        ['request answered', 'GET', '/healthz', 200],
        ['request answered', 'GET', '/nowhere', 404],
      ],
    );
    assert.doesNotMatch(logs, /incoming request|request completed/);
  });
});
