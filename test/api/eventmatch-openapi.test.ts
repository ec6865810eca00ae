import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { startEventmatchApp } from '../support/app.js';
import { openTestDatabase, testBackends } from '../support/database.js';

interface Operation {
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown>; required?: string[] } }> };
  responses: Record<string, { content?: Record<string, { schema: { properties?: Record<string, unknown>; items?: { properties?: Record<string, unknown> } } }> }>;
}

const RECORD_FIELDS = ['user', 'uuid', 'name', 'jsonpath', 'target_url', 'auth', 'extensions', 'created', 'updated', 'deleted', 'disabled', 'version', 'error'];

for (const backend of testBackends()) {
  describe(`/openapi.json for /eventmatch (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    let paths: Record<string, Record<string, Operation>>;
    before(async () => {
      test = await openTestDatabase(backend);
      app = await startEventmatchApp(test.handle, { identity: { header: 'x-user', defaultUser: null } }, 1024);
      const response = await app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(response.statusCode, 200);
      paths = response.json<{ paths: Record<string, Record<string, Operation>> }>().paths;
    });
    after(async () => {
      await app.close();
      await test.close();
    });

    it('lists every /eventmatch route', () => {
      const operations = Object.entries(paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
      for (const expected of [
        'POST /eventmatch',
        'GET /eventmatch',
        'GET /eventmatch/{uuid}',
        'PUT /eventmatch/{uuid}',
        'DELETE /eventmatch/{uuid}',
        'POST /eventmatch/test',
        'POST /eventmatch/{uuid}/test',
      ]) {
        assert.ok(operations.includes(expected), `${expected} in ${operations.join(', ')}`);
      }
    });

    it('describes request bodies, parameters and the record', () => {
      const create = paths['/eventmatch']!['post']!;
      const body = create.requestBody!.content['application/json']!.schema;
      assert.deepEqual(body.required, ['name', 'jsonpath', 'target_url']);
      for (const field of ['name', 'jsonpath', 'target_url', 'auth', 'extensions', 'disabled']) assert.ok(body.properties?.[field], field);
      assert.deepEqual(Object.keys(create.responses['200']!.content!['application/json']!.schema.properties ?? {}), RECORD_FIELDS);
      assert.ok(create.responses['4XX'] ?? create.responses['4xx'], 'errors are described');

      const list = paths['/eventmatch']!['get']!;
      const query = (list.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      assert.deepEqual(query.sort(), ['limit', 'offset']);
      assert.deepEqual(Object.keys(list.responses['200']!.content!['application/json']!.schema.items?.properties ?? {}), RECORD_FIELDS);

      const read = paths['/eventmatch/{uuid}']!['get']!;
      const parameters = (read.parameters ?? []).map((p) => `${p.in}:${p.name}`);
      assert.ok(parameters.includes('path:uuid'));
      assert.ok(parameters.includes('header:x-user'), 'the configured identity header is documented');

      const tryIt = paths['/eventmatch/test']!['post']!;
      assert.deepEqual(tryIt.requestBody!.content['application/json']!.schema.required, ['jsonpath', 'event']);
      assert.deepEqual(Object.keys(tryIt.responses['200']!.content!['application/json']!.schema.properties ?? {}), ['matches', 'dialect', 'values', 'paths']);
    });
  });
}
