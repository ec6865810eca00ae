/**
 * Every answer of the HTTP API is counted and timed by method, route pattern and status, on
 * every database: a path's ids (and a client's invented paths) never become series of their own.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { UNMATCHED_ROUTE } from '../../src/api/app.js';
import { createMetrics, type ServiceMetrics } from '../../src/metrics/registry.js';
import { parseExposition, type Samples, sample } from '../metrics/exposition.js';
import { startApiApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';

const ALICE = { 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `HTTP request metrics (${backend.name})`, () => {
    let t: Awaited<ReturnType<typeof openTestDatabase>>;
    let metrics: ServiceMetrics;
    let app: FastifyInstance;

    before(async () => {
      t = await openTestDatabase(backend);
      metrics = createMetrics();
      app = await startApiApp(t.handle, { app: { metrics } });
    });
    after(async () => {
      await app.close();
      await t.close();
    });

    const scrape = async (): Promise<Samples> => parseExposition(await metrics.registry.metrics());
    const requests = (samples: Samples, method: string, route: string, status: number) =>
      sample(samples, 'notifications_http_requests_total', { method, route, status: String(status) });
    const timed = (samples: Samples, method: string, route: string) =>
      sample(samples, 'notifications_http_request_duration_seconds_count', { method, route });

    it('labels each answer with the route pattern, not the path, and times it', async () => {
      const created = await app.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: ALICE,
        payload: { name: 'n', jsonpath: '$.id', target_url: 'http://127.0.0.1:9/' },
      });
      assert.equal(created.statusCode, 200, created.body);
      const uuid = created.json<{ uuid: string }>().uuid;
      assert.equal((await app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: ALICE })).statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: ALICE })).statusCode, 200);
      const unknown = '00000000-0000-4000-8000-000000000000';
      assert.equal((await app.inject({ method: 'GET', url: `/eventmatch/${unknown}`, headers: ALICE })).statusCode, 404);
      assert.equal((await app.inject({ method: 'GET', url: `/eventmatch/${uuid}` })).statusCode, 401);

      const samples = await scrape();
      assert.equal(requests(samples, 'POST', '/eventmatch', 200), 1);
      assert.equal(requests(samples, 'GET', '/eventmatch/:uuid', 200), 2);
      assert.equal(requests(samples, 'GET', '/eventmatch/:uuid', 404), 1);
      assert.equal(requests(samples, 'GET', '/eventmatch/:uuid', 401), 1);
      assert.equal(timed(samples, 'GET', '/eventmatch/:uuid'), 4);
      assert.ok(sample(samples, 'notifications_http_request_duration_seconds_sum', { method: 'GET', route: '/eventmatch/:uuid' })! > 0);
      const text = await metrics.registry.metrics();
      assert.ok(!text.includes(uuid), 'no series names a subscription');
    });

    it('puts every path no route serves into one series', async () => {
      for (const path of ['/nope', '/nope/1', '/eventmatch/a/b/c', `/x${'y'.repeat(200)}`]) {
        assert.equal((await app.inject({ method: 'GET', url: path })).statusCode, 404);
      }
      assert.equal((await app.inject({ method: 'DELETE', url: '/receive' })).statusCode, 405);
      const samples = await scrape();
      assert.equal(requests(samples, 'GET', UNMATCHED_ROUTE, 404), 4);
      assert.equal(requests(samples, 'DELETE', UNMATCHED_ROUTE, 405), 1);
      assert.ok(!(await metrics.registry.metrics()).includes('nope'), 'no series names a path asked for');
    });

    it('counts /receive, including the answers refused before any handler ran', async () => {
      const event = { specversion: '1.0', id: 'h-1', source: '/http-metrics', type: 't' };
      const post = (contentType: string) =>
        app.inject({ method: 'POST', url: '/receive', headers: { 'content-type': contentType }, payload: JSON.stringify(event) });
      assert.equal((await post('application/cloudevents+json')).statusCode, 200);
      assert.equal((await post('text/plain')).statusCode, 415);
      const samples = await scrape();
      assert.equal(requests(samples, 'POST', '/receive', 200), 1);
      assert.equal(requests(samples, 'POST', '/receive', 415), 1);
      assert.equal(timed(samples, 'POST', '/receive'), 2);
    });
  });
}
