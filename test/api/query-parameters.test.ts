/**
 * One rule for query strings: on every route, a parameter the route does not define is refused
 * with 400 QUERY_PARAMETER_INVALID naming it, before the route acts (nothing stored, changed,
 * deleted, logged or delivered), and /openapi.json lists that answer for every route. The
 * console's files alone take any query string.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { Registry } from 'prom-client';
import { healthRoutes } from '../../src/api/health.js';
import { metricsRoutes } from '../../src/api/metrics-routes.js';
import { consoleRoutes } from '../../src/console/routes.js';
import { startApiApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';

const USER = { 'http-remote-user': 'asker' };
const JSON_TYPE = { ...USER, 'content-type': 'application/json' };
const SUBSCRIPTION = { name: 'all', jsonpath: '$', target_url: 'http://127.0.0.1/' };
const EVENT = { specversion: '1.0', id: 'q-1', source: '/query-parameters', type: 't', data: {} };
const CLOUDEVENT = { 'content-type': 'application/cloudevents+json' };
const PAGE = { body: Buffer.from('<!doctype html><title>console</title>'), type: 'text/html; charset=utf-8', etag: '"page"' };

/** A body each route takes, so that only the query string can be at fault. */
const BODIES: Record<string, { headers: Record<string, string>; payload: string }> = {
  'POST /eventmatch': { headers: JSON_TYPE, payload: JSON.stringify(SUBSCRIPTION) },
  'PUT /eventmatch/:uuid': { headers: JSON_TYPE, payload: JSON.stringify({ name: 'changed' }) },
  'POST /eventmatch/test': { headers: JSON_TYPE, payload: JSON.stringify({ jsonpath: '$', event: EVENT }) },
  'POST /eventmatch/:uuid/test': { headers: JSON_TYPE, payload: JSON.stringify(EVENT) },
  'POST /eventmatch/:uuid/deliveries/recover': { headers: JSON_TYPE, payload: JSON.stringify({ since: '2000-01-01T00:00:00' }) },
  'POST /receive': { headers: CLOUDEVENT, payload: JSON.stringify(EVENT) },
};

/** The routes that must act on the rule, whichever way they are registered. */
const NAMED = [
  'GET /eventmatch/:uuid',
  'GET /eventmatch/:uuid/secret',
  'PUT /eventmatch/:uuid',
  'DELETE /eventmatch/:uuid',
  'POST /eventmatch',
  'POST /eventmatch/test',
  'POST /receive',
  'POST /eventmatch/:uuid/deliveries/:elm/retry',
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
  'GET /openapi.json',
];

interface RefusedAnswer {
  code: string;
  message: string;
}

for (const backend of testBackends()) {
  describeOn(backend, `a query parameter the route does not define (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    const routes: Array<{ method: HTTPMethods; url: string }> = [];
    let uuid = '';

    before(async () => {
      test = await openTestDatabase(backend);
      // Every route the app is given, as Fastify registers it (HEAD beside each GET included).
      const recordRoutes = (scope: FastifyInstance) =>
        void scope.addHook('onRoute', (route) => {
          for (const method of [route.method].flat()) routes.push({ method, url: route.url });
        });
      app = await startApiApp(test.handle, {
        routes: [
          recordRoutes,
          healthRoutes({ database: test.handle, policyMode: 'allow-all' }),
          metricsRoutes({ registry: new Registry() }),
          consoleRoutes({ assets: new Map([['', PAGE]]) }),
        ],
      });
      uuid = (await app.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: SUBSCRIPTION })).json<{ uuid: string }>().uuid;
    });
    after(async () => {
      await app?.close();
      await test?.close();
    });

    const refused = (response: { statusCode: number; json: () => unknown }, name: string, what: string) => {
      assert.equal(response.statusCode, 400, what);
      const body = response.json() as RefusedAnswer;
      assert.equal(body.code, 'QUERY_PARAMETER_INVALID', what);
      assert.equal(body.message, `querystring: unknown field "${name}"`, what);
    };
    const read = async () => {
      const response = await app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: USER });
      assert.equal(response.statusCode, 200);
      return response.json<object>();
    };

    it('is refused on every route of the API, naming it', async () => {
      const all = routes.map(({ method, url }) => `${method} ${url}`);
      for (const named of NAMED) assert.ok(all.includes(named), `${named} is among ${all.join('; ')}`);
      const walked = all.filter((route) => !route.includes(' /console'));
      for (const route of walked) {
        const [method, path] = route.split(' ') as [HTTPMethods, string];
        const url = path.replace(':uuid', uuid).replace(':elm', randomUUID());
        const body = BODIES[route];
        const headers = { ...USER, ...body?.headers };
        const response = await app.inject({ method, url: `${url}?colour=blue`, headers, ...(body ? { payload: body.payload } : {}) });
        if (method === 'HEAD') assert.equal(response.statusCode, 400, route);
        else refused(response, 'colour', route);
      }
    });

    it('is refused beside the parameters a route defines, and named whatever it is', async () => {
      refused(await app.inject({ method: 'GET', url: '/eventmatch?limit=5&colour=blue', headers: USER }), 'colour', 'list');
      refused(await app.inject({ method: 'GET', url: `/eventmatch/${uuid}?limit=5`, headers: USER }), 'limit', 'limit on a read');
      refused(await app.inject({ method: 'GET', url: `/eventmatch/${uuid}?flag`, headers: USER }), 'flag', 'a bare name');
      refused(await app.inject({ method: 'GET', url: `/eventmatch/${uuid}?x=1&x=2`, headers: USER }), 'x', 'a repeated name');
      // No parameter at all, however the URL ends.
      for (const end of ['?', '?&'])
        assert.equal((await app.inject({ method: 'GET', url: `/eventmatch/${uuid}${end}`, headers: USER })).statusCode, 200, end);
    });

    it('POST /receive logs nothing, delivers nothing', async () => {
      const logged = async () => (await test.handle.db.selectFrom('events').select('event_id').execute()).length;
      const matched = async () => (await test.handle.db.selectFrom('matches').select('uuid').execute()).length;
      const [events, matches] = [await logged(), await matched()];
      const event = JSON.stringify({ ...EVENT, id: 'refused' });
      refused(await app.inject({ method: 'POST', url: '/receive?x=1', headers: CLOUDEVENT, payload: event }), 'x', 'receive');
      assert.equal(await logged(), events);
      assert.equal(await matched(), matches);
      const history = await app.inject({ method: 'GET', url: `/eventmatch/${uuid}/deliveries`, headers: USER });
      assert.deepEqual(
        history.json<Array<{ event: { id: string } }>>().filter((delivery) => delivery.event.id === 'refused'),
        [],
      );
      // The same event without the parameter is taken, and matches the subscription.
      const taken = await app.inject({ method: 'POST', url: '/receive', headers: CLOUDEVENT, payload: event });
      assert.equal(taken.statusCode, 200);
      assert.equal(await logged(), events + 1);
    });

    it('POST /eventmatch creates no subscription', async () => {
      const count = async () => (await app.inject({ method: 'GET', url: '/eventmatch', headers: USER })).json<unknown[]>().length;
      const before = await count();
      const create = { method: 'POST' as const, url: '/eventmatch?x=1', headers: JSON_TYPE, payload: JSON.stringify(SUBSCRIPTION) };
      refused(await app.inject(create), 'x', 'create');
      assert.equal(await count(), before);
    });

    it('PUT /eventmatch/{uuid} changes nothing', async () => {
      const before = await read();
      const change = { method: 'PUT' as const, url: `/eventmatch/${uuid}?x=1`, headers: JSON_TYPE, payload: '{"name":"changed"}' };
      refused(await app.inject(change), 'x', 'update');
      assert.deepEqual(await read(), before);
    });

    it('DELETE /eventmatch/{uuid} deletes nothing', async () => {
      refused(await app.inject({ method: 'DELETE', url: `/eventmatch/${uuid}?x=1`, headers: USER }), 'x', 'delete');
      assert.equal(((await read()) as { deleted: unknown }).deleted, null);
    });

    it('GET /eventmatch/{uuid}/secret shows no secret, and a rotation replaces none', async () => {
      const secret = async () =>
        (await app.inject({ method: 'GET', url: `/eventmatch/${uuid}/secret`, headers: USER })).json<{ secret: string }>().secret;
      const before = await secret();
      const shown = await app.inject({ method: 'GET', url: `/eventmatch/${uuid}/secret?x=1`, headers: USER });
      refused(shown, 'x', 'secret');
      assert.doesNotMatch(shown.body, new RegExp(before.replace(/[+/]/g, '.')));
      refused(await app.inject({ method: 'POST', url: `/eventmatch/${uuid}/secret/rotate?x=1`, headers: USER }), 'x', 'rotate');
      assert.equal(await secret(), before);
    });

    it("the console's files take any query string", async () => {
      for (const url of ['/console/?v=2', '/console/?utm_source=mail&x']) {
        const response = await app.inject({ method: 'GET', url });
        assert.equal(response.statusCode, 200, url);
        assert.equal(response.body, PAGE.body.toString(), url);
      }
      const moved = await app.inject({ method: 'GET', url: '/console?v=2' });
      assert.equal(moved.statusCode, 308);
    });

    it('is among the error answers /openapi.json gives for every route', async () => {
      type Operation = {
        responses: Record<string, { content?: Record<string, { schema: { properties: { code: { enum: string[] } } } }> }>;
      };
      const paths = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, Operation>> }>()
        .paths;
      const operations = Object.entries(paths).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as const),
      );
      const documented = routes
        .filter(({ method, url }) => method !== 'HEAD' && !url.startsWith('/console') && url !== '/openapi.json')
        .map(({ method, url }) => `${method} ${url.replace(/:(\w+)/g, '{$1}')}`);
      assert.deepEqual(operations.map(([route]) => route).sort(), documented.sort());
      for (const [route, operation] of operations) {
        // The event stream's answers are all described as text/event-stream (its `produces`).
        const codes = Object.values(operation.responses['400']?.content ?? {})[0]?.schema.properties.code.enum ?? [];
        assert.ok(codes.includes('QUERY_PARAMETER_INVALID'), `${route}: ${codes.join(', ')}`);
        assert.equal(codes.filter((code) => code === 'QUERY_PARAMETER_INVALID').length, 1, route);
      }
    });
  });
}
