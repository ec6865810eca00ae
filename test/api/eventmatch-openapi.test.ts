import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { PUSH_KINDS } from '../../src/destinations/kinds.js';
import { ERRORS, type ErrorCode } from '../../src/errors.js';
import { startEventmatchApp, appOn } from '../support/app.js';
import { describeOn, testBackends } from '../support/database.js';
import { EXPECTED_RECORD_FIELDS } from '../support/record-fields.js';

interface Operation {
  parameters?: Array<{ in: string; name: string; schema: Record<string, unknown> }>;
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown>; required?: string[] } }> };
  responses: Record<
    string,
    {
      headers?: Record<string, { schema: { type: string } }>;
      content?: Record<string, { schema: { properties?: Record<string, unknown>; items?: { properties?: Record<string, unknown> } } }>;
    }
  >;
}

/**
 * Each route's documented answers: 401 and 400 (an identity header twice) everywhere, 404 with a
 * uuid, 413 and 415 with a body, 500 and 503 (the database not answering, or out of space) everywhere.
 */
const STATUSES: Record<string, string[]> = {
  'POST /eventmatch': ['200', '400', '401', '403', '413', '415', '500', '503'],
  'GET /eventmatch': ['200', '400', '401', '500', '503'],
  'GET /eventmatch/{uuid}': ['200', '400', '401', '404', '500', '503'],
  'PUT /eventmatch/{uuid}': ['200', '400', '401', '403', '404', '413', '415', '500', '503'],
  'DELETE /eventmatch/{uuid}': ['200', '400', '401', '403', '404', '413', '415', '500', '503'],
  'POST /eventmatch/test': ['200', '400', '401', '403', '413', '415', '500', '503'],
  'POST /eventmatch/{uuid}/test': ['200', '400', '401', '403', '404', '413', '415', '500', '503'],
  'GET /eventmatch/{uuid}/secret': ['200', '400', '401', '404', '500', '503'],
  'POST /eventmatch/{uuid}/secret/rotate': ['200', '400', '401', '403', '404', '413', '415', '500', '503'],
};

const BODY_400 = ['BODY_NOT_JSON', 'BODY_TOO_DEEP', 'BODY_INCOMPLETE'];
const FIELDS_400 = [
  'FIELD_REQUIRED',
  'FIELD_UNKNOWN',
  'FIELD_TYPE',
  'FIELD_INVALID',
  'TARGET_URL_INVALID',
  'TARGET_DENIED',
  'TARGET_CONSENT_REFUSED',
  'JSONPATH_SYNTAX',
];
/**
 * The 400 codes each route documents: beside these, every route can answer IDENTITY_HEADER_REPEATED
 * and QUERY_PARAMETER_INVALID (a query parameter it does not define; the list's bounds too).
 */
const CODES_400: Record<string, string[]> = {
  'POST /eventmatch': [...BODY_400, ...FIELDS_400],
  'GET /eventmatch': [],
  'GET /eventmatch/{uuid}': [],
  'PUT /eventmatch/{uuid}': [...BODY_400, ...FIELDS_400],
  'DELETE /eventmatch/{uuid}': BODY_400,
  'POST /eventmatch/test': [...BODY_400, 'FIELD_REQUIRED', 'FIELD_UNKNOWN', 'FIELD_TYPE', 'FIELD_INVALID', 'JSONPATH_SYNTAX'],
  'POST /eventmatch/{uuid}/test': [...BODY_400, 'FIELD_TYPE'],
  'GET /eventmatch/{uuid}/secret': [],
  'POST /eventmatch/{uuid}/secret/rotate': [...BODY_400, 'FIELD_UNKNOWN', 'FIELD_TYPE', 'FIELD_INVALID'],
};

type ErrorSchema = { properties?: Record<string, { enum?: string[] }> };
const codesOf = (operation: Operation, status: string): string[] =>
  (operation.responses[status]?.content?.['application/json']?.schema as ErrorSchema | undefined)?.properties?.code?.enum ?? [];
const MAX_BODY = 1024;

interface Limited {
  maxLength?: number;
  maxProperties?: number;
  description?: string;
  properties?: Record<string, Limited>;
}

for (const backend of testBackends()) {
  describeOn(backend, `/openapi.json for /eventmatch (${backend.name})`, () => {
    const app = appOn(backend, (db) => startEventmatchApp(db, { identity: { header: 'x-user', defaultUser: null } }, MAX_BODY));
    let paths: Record<string, Record<string, Operation>>;
    before(async () => {
      const response = await app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(response.statusCode, 200);
      paths = response.json<{ paths: Record<string, Record<string, Operation>> }>().paths;
    });

    it('lists every /eventmatch route', () => {
      const operations = Object.entries(paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
      );
      for (const expected of [
        'POST /eventmatch',
        'GET /eventmatch',
        'GET /eventmatch/{uuid}',
        'PUT /eventmatch/{uuid}',
        'DELETE /eventmatch/{uuid}',
        'POST /eventmatch/test',
        'POST /eventmatch/{uuid}/test',
        'GET /eventmatch/{uuid}/secret',
        'POST /eventmatch/{uuid}/secret/rotate',
      ]) {
        assert.ok(operations.includes(expected), `${expected} in ${operations.join(', ')}`);
      }
    });

    it('describes request bodies, parameters and the record', () => {
      const create = paths['/eventmatch']!.post!;
      const body = create.requestBody!.content['application/json']!.schema;
      // target_url is required for push only, which the schema cannot say: input.ts does.
      assert.deepEqual(body.required, ['name', 'jsonpath']);
      for (const field of ['name', 'jsonpath', 'delivery', 'target_url', 'auth', 'extensions', 'disabled', 'rate_limit', 'notices'])
        assert.ok(body.properties?.[field], field);
      assert.deepEqual(Object.keys(create.responses['200']!.content!['application/json']!.schema.properties ?? {}), EXPECTED_RECORD_FIELDS);

      const list = paths['/eventmatch']!.get!;
      const query = (list.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      assert.deepEqual(query.sort(), ['limit', 'offset']);
      assert.deepEqual(
        Object.keys(list.responses['200']!.content!['application/json']!.schema.items?.properties ?? {}),
        EXPECTED_RECORD_FIELDS,
      );

      const read = paths['/eventmatch/{uuid}']!.get!;
      const parameters = (read.parameters ?? []).map((p) => `${p.in}:${p.name}`);
      assert.ok(parameters.includes('path:uuid'));
      assert.ok(parameters.includes('header:x-user'), 'the configured identity header is documented');

      const tryIt = paths['/eventmatch/test']!.post!;
      assert.deepEqual(tryIt.requestBody!.content['application/json']!.schema.required, ['jsonpath', 'event']);
      assert.deepEqual(Object.keys(tryIt.responses['200']!.content!['application/json']!.schema.properties ?? {}), [
        'matches',
        'dialect',
        'values',
        'paths',
      ]);
    });

    it('documents the limits on stored fields, on create and update', () => {
      for (const [path, method] of [
        ['/eventmatch', 'post'],
        ['/eventmatch/{uuid}', 'put'],
      ] as const) {
        const body = paths[path]![method]!.requestBody!.content['application/json']!.schema as { properties: Record<string, Limited> };
        const { name, target_url, auth, extensions } = body.properties as Record<string, Limited>;
        assert.equal(name?.maxLength, 200, path);
        assert.equal(target_url?.maxLength, 2048, path);
        assert.deepEqual(
          [auth?.properties?.basic?.properties?.username?.maxLength, auth?.properties?.basic?.properties?.password?.maxLength],
          [1024, 1024],
        );
        assert.deepEqual(
          [auth?.properties?.header?.properties?.type?.maxLength, auth?.properties?.header?.properties?.credentials?.maxLength],
          [1024, 1024],
        );
        assert.equal(extensions?.maxProperties, 16, path);
        assert.match(String(extensions?.description), /strings of at most 256 characters/);
        for (const kind of PUSH_KINDS) {
          for (const scheme of kind.schemes)
            assert.match(String(target_url?.description), new RegExp(`\\b${scheme}\\b`), `${path}: ${scheme}`);
        }
        assert.match(
          String(auth?.description),
          /A target_url of scheme amqp, .* takes basic \(the broker's user name and password\), or \{\}/,
        );
      }
    });

    it('documents the Location header of a create', () => {
      assert.deepEqual(paths['/eventmatch']!.post!.responses['200']!.headers?.Location?.schema, { type: 'string' });
    });

    it('types limit and offset as integers with their bounds and defaults', () => {
      const query = (operation: Operation) =>
        Object.fromEntries((operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p.schema]));
      assert.deepEqual(query(paths['/eventmatch']!.get!), {
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        offset: { type: 'integer', minimum: 0, default: 0 },
      });
    });

    it('documents, for each route, the error statuses it answers, each in the error shape', () => {
      for (const [route, statuses] of Object.entries(STATUSES)) {
        const [method, path] = route.split(' ') as [string, string];
        const responses = paths[path]![method.toLowerCase()]!.responses;
        assert.deepEqual(Object.keys(responses).sort(), statuses, route);
        for (const status of statuses.filter((s) => s !== '200')) {
          // A JSONPath error also says where reading stopped: `position`, on the routes that read one.
          const jsonpath = codesOf(paths[path]![method.toLowerCase()]!, status).includes('JSONPATH_SYNTAX');
          assert.deepEqual(
            Object.keys(responses[status]!.content!['application/json']!.schema.properties ?? {}),
            ['statusCode', 'error', 'code', 'message', ...(jsonpath ? ['position'] : [])],
            `${route} ${status}`,
          );
        }
      }
    });

    it("names each error answer's codes, each of the catalogue with the response's status", () => {
      for (const [route, expected] of Object.entries(CODES_400)) {
        const [method, path] = route.split(' ') as [string, string];
        const operation = paths[path]![method.toLowerCase()]!;
        assert.deepEqual(
          [...codesOf(operation, '400')].sort(),
          ['IDENTITY_HEADER_REPEATED', 'QUERY_PARAMETER_INVALID', ...expected].sort(),
          route,
        );
        assert.deepEqual(codesOf(operation, '401'), ['UNAUTHENTICATED', 'IDENTITY_UNTRUSTED'], route);
        assert.deepEqual(codesOf(operation, '503'), ['DATABASE_UNAVAILABLE', 'STORAGE_FULL'], route);
        if (path.includes('{uuid}')) assert.deepEqual(codesOf(operation, '404'), ['SUBSCRIPTION_NOT_FOUND'], route);
        if (method !== 'GET')
          assert.deepEqual(
            codesOf(operation, '403'),
            route === 'POST /eventmatch' ? ['SUBSCRIPTION_LIMIT', 'CROSS_SITE_REQUEST'] : ['CROSS_SITE_REQUEST'],
            route,
          );
        for (const [status, response] of Object.entries(operation.responses)) {
          if (status === '200') continue;
          const codes = codesOf(operation, status);
          assert.ok(codes.length > 0, `${route} ${status} names its codes`);
          for (const code of codes)
            assert.equal(ERRORS[code as ErrorCode]?.status, Number(status), `${route}: ${code} is a ${status} of the catalogue`);
          assert.match(
            (response as { description?: string }).description ?? '',
            new RegExp(`code: ${codes.join(', ')}$`),
            `${route} ${status}`,
          );
        }
      }
      const ofRecords = ['GET /eventmatch', 'GET /eventmatch/{uuid}', 'PUT /eventmatch/{uuid}', 'DELETE /eventmatch/{uuid}'];
      for (const route of ofRecords) {
        const [method, path] = route.split(' ') as [string, string];
        assert.deepEqual([...codesOf(paths[path]![method.toLowerCase()]!, '500')].sort(), ['CREDENTIALS_UNREADABLE', 'INTERNAL'], route);
      }
    });

    it('documents no 4xx a route cannot answer, and every one it can', async () => {
      const created = await app.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: { 'x-user': 'u' },
        payload: { name: 'n', jsonpath: '$', target_url: 'http://127.0.0.1/' },
      });
      const known = created.json<{ uuid: string }>().uuid;
      const bodies: Record<string, unknown> = {
        'POST /eventmatch': { name: 'n', jsonpath: '$', target_url: 'http://127.0.0.1/' },
        'PUT /eventmatch/{uuid}': { name: 'x' },
        'POST /eventmatch/test': { jsonpath: '$', event: {} },
        'POST /eventmatch/{uuid}/test': {},
      };
      for (const [route, documented] of Object.entries(STATUSES)) {
        const [method, path] = route.split(' ') as ['GET' | 'POST' | 'PUT' | 'DELETE', string];
        const url = (uuid: string) => path.replace('{uuid}', uuid);
        const [type, payload] =
          bodies[route] === undefined ? [{}, {}] : [{ 'content-type': 'application/json' }, { payload: JSON.stringify(bodies[route]) }];
        const probes = [
          { url: url(known), headers: {} },
          { url: url(known), headers: { 'x-user': ['u', 'v'] } },
          { url: url('0190d4c2-0000-7000-8000-000000000000'), headers: { 'x-user': 'u', ...type }, ...payload },
          {
            url: url(known),
            headers: { 'x-user': 'u', 'content-type': 'application/json' },
            payload: JSON.stringify({ name: 'x'.repeat(MAX_BODY) }),
          },
          { url: url(known), headers: { 'x-user': 'u', 'content-type': 'text/plain' }, payload: 'x' },
          // A browser sending it for another site's page: refused unless it only reads.
          { url: url(known), headers: { 'x-user': 'u', 'sec-fetch-site': 'cross-site' } },
        ];
        const answered = new Set<string>();
        for (const probe of probes) {
          const response = await app.inject({ method, ...probe });
          if (response.statusCode < 400) continue;
          answered.add(String(response.statusCode));
          const { code } = response.json<{ code: string }>();
          assert.ok(
            codesOf(paths[path]![method.toLowerCase()]!, String(response.statusCode)).includes(code),
            `${route}: ${code} is documented`,
          );
        }
        assert.deepEqual(
          [...answered].sort(),
          documented.filter((s) => s !== '200' && s !== '500' && s !== '503'),
          route,
        );
      }
    });
  });
}
