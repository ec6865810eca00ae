import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import type { DatabaseHandle } from '../../src/db/connect.js';
import type { ErrorCode } from '../../src/errors.js';
import { startEventmatchApp, appOn } from '../support/app.js';
import { describeOn, testBackends } from '../support/database.js';
import { AT_LIMITS, header, overLimits } from '../support/subscription-limits.js';

const startApp = (database: DatabaseHandle, maxBodyBytes?: number) => startEventmatchApp(database, {}, maxBodyBytes);

const USER = { 'http-remote-user': 'alice' };
const valid = { name: 'n', jsonpath: '$.data', target_url: 'https://example.org/hook' };

/** Each invalid body with (a pattern of) the message that must name the field, and the code. */
const INVALID: Array<[string, Record<string, unknown>, RegExp, ErrorCode]> = [
  ['name missing', { jsonpath: '$', target_url: valid.target_url }, /^body\.name: required$/, 'FIELD_REQUIRED'],
  ['jsonpath missing', { name: 'n', target_url: valid.target_url }, /^body\.jsonpath: required$/, 'FIELD_REQUIRED'],
  ['target_url missing', { name: 'n', jsonpath: '$' }, /^body\.target_url: required for a push subscription/, 'FIELD_REQUIRED'],
  ['name not a string', { ...valid, name: 5 }, /^body\.name: must be a string$/, 'FIELD_TYPE'],
  ['name null', { ...valid, name: null }, /^body\.name: must be a string$/, 'FIELD_TYPE'],
  ['name empty', { ...valid, name: '' }, /^body\.name: must not be empty$/, 'FIELD_INVALID'],
  ['name blank', { ...valid, name: ' \t ' }, /^body\.name: must not be empty$/, 'FIELD_INVALID'],
  // PostgreSQL refuses NUL (a 500 there, once) and turns an unpaired surrogate into U+FFFD.
  [
    'name with NUL',
    { ...valid, name: 'a\u0000b' },
    /^body\.name: must not contain control characters, unpaired surrogates or noncharacters$/,
    'FIELD_INVALID',
  ],
  ['name with newline', { ...valid, name: 'a\nb' }, /^body\.name: must not contain control characters/, 'FIELD_INVALID'],
  [
    'name with unpaired surrogate',
    { ...valid, name: 'a\ud800b' },
    /^body\.name: must not contain control characters, unpaired surrogates/,
    'FIELD_INVALID',
  ],
  [
    'jsonpath with unpaired surrogate',
    { ...valid, jsonpath: "$['\udc00']" },
    /^body\.jsonpath: must not contain unpaired surrogates/,
    'FIELD_INVALID',
  ],
  ['jsonpath not a string', { ...valid, jsonpath: ['$'] }, /^body\.jsonpath: must be a string$/, 'FIELD_TYPE'],
  ['jsonpath empty', { ...valid, jsonpath: '' }, /^body\.jsonpath: invalid JSONPath at position 0: /, 'JSONPATH_SYNTAX'],
  [
    'jsonpath invalid',
    { ...valid, jsonpath: '$.data[?(@.size >' },
    /^body\.jsonpath: invalid JSONPath at position 1[0-9]: /,
    'JSONPATH_SYNTAX',
  ],
  [
    'jsonpath unbalanced',
    { ...valid, jsonpath: "$['a'" },
    /^body\.jsonpath: invalid JSONPath at position \d+: .*(at the end|near)/,
    'JSONPATH_SYNTAX',
  ],
  ['target_url not a string', { ...valid, target_url: { href: 'x' } }, /^body\.target_url: must be a string or null$/, 'FIELD_TYPE'],
  [
    'target_url relative',
    { ...valid, target_url: '/hook' },
    /^body\.target_url: must be an absolute http or https URL/,
    'TARGET_URL_INVALID',
  ],
  [
    'target_url no scheme',
    { ...valid, target_url: 'example.org/hook' },
    /^body\.target_url: must be an absolute http or https URL/,
    'TARGET_URL_INVALID',
  ],
  [
    'target_url ftp',
    { ...valid, target_url: 'ftp://example.org/x' },
    /^body\.target_url: must be an http, https, amqp, mqtt, nats or redis URL, not ftp$/,
    'TARGET_URL_INVALID',
  ],
  [
    'target_url mailto',
    { ...valid, target_url: 'mailto:a@example.org' },
    /^body\.target_url: must be an http, https, amqp, mqtt, nats or redis URL, not mailto$/,
    'TARGET_URL_INVALID',
  ],
  [
    'target_url credentials',
    { ...valid, target_url: 'https://user:pw@example.org/' },
    /^body\.target_url: must not contain credentials; put them in auth$/,
    'TARGET_URL_INVALID',
  ],
  [
    'target_url space',
    { ...valid, target_url: ' https://example.org/' },
    /^body\.target_url: must not contain spaces/,
    'TARGET_URL_INVALID',
  ],
  ['target_url empty', { ...valid, target_url: '' }, /^body\.target_url: must be an absolute/, 'TARGET_URL_INVALID'],
  [
    'target_url without //',
    { ...valid, target_url: 'http:example.org/hook' },
    /^body\.target_url: must be an absolute http or https URL/,
    'TARGET_URL_INVALID',
  ],
  [
    'target_url with one /',
    { ...valid, target_url: 'https:/example.org/hook' },
    /^body\.target_url: must be an absolute http or https URL/,
    'TARGET_URL_INVALID',
  ],
  [
    'target_url with ///',
    { ...valid, target_url: 'http:///example.org/hook' },
    /^body\.target_url: must be an absolute http or https URL/,
    'TARGET_URL_INVALID',
  ],
  [
    'amqp target_url with a password',
    { ...valid, target_url: 'amqp://guest:guest@127.0.0.1/?routing_key=q' },
    /^body\.target_url: must not contain credentials; put them in auth \(basic\)$/,
    'TARGET_URL_INVALID',
  ],
  [
    'amqp target_url without exchange or routing key',
    { ...valid, target_url: 'amqp://127.0.0.1/' },
    /^body\.target_url: routing_key is required without an exchange/,
    'TARGET_URL_INVALID',
  ],
  [
    'amqp target_url with another query parameter',
    { ...valid, target_url: 'amqp://127.0.0.1/?routing_key=q&heartbeat=5' },
    /^body\.target_url: unknown query parameter "heartbeat": only exchange and routing_key are read$/,
    'TARGET_URL_INVALID',
  ],
  [
    'amqp target_url with header auth',
    { ...valid, target_url: 'amqp://127.0.0.1/?routing_key=q', auth: { type: 'header', header: { type: 'Bearer', credentials: 't' } } },
    /^body\.auth\.type: must be "basic" \(the broker's user name and password\), or send \{\} for none: the target_url is a broker's \(amqp\)$/,
    'FIELD_INVALID',
  ],
  [
    'mqtt target_url with a wildcard',
    { ...valid, target_url: 'mqtt://127.0.0.1/orders/%2B' },
    /^body\.target_url: the topic "orders\/\+" has a wildcard \(\+ or #\): a message is published to one topic, not a filter$/,
    'TARGET_URL_INVALID',
  ],
  [
    'mqtt target_url without a topic',
    { ...valid, target_url: 'mqtt://127.0.0.1/' },
    /^body\.target_url: names no topic: write it as the path, mqtt:\/\/host\[:port\]\/TOPIC$/,
    'TARGET_URL_INVALID',
  ],
  [
    'nats target_url without a subject',
    { ...valid, target_url: 'nats://127.0.0.1:4222' },
    /^body\.target_url: names no subject: write it as the path, nats:\/\/host\[:port\]\/SUBJECT$/,
    'TARGET_URL_INVALID',
  ],
  [
    'nats target_url with a wildcard',
    { ...valid, target_url: 'nats://127.0.0.1/orders.>' },
    /^body\.target_url: the subject "orders.>" has a wildcard: publish to one subject$/,
    'TARGET_URL_INVALID',
  ],
  [
    'redis target_url without a key',
    { ...valid, target_url: 'redis://127.0.0.1/' },
    /^body\.target_url: names no stream key: write it as redis:\/\/host\[:port\]\/KEY$/,
    'TARGET_URL_INVALID',
  ],
  [
    'redis target_url with a database and a key',
    { ...valid, target_url: 'redis://127.0.0.1/1/events' },
    /^body\.target_url: the path is the stream key: one segment/,
    'TARGET_URL_INVALID',
  ],
  ['notices not a boolean', { ...valid, notices: 'true' }, /^body\.notices: must be a boolean$/, 'FIELD_TYPE'],
  ['notices a number', { ...valid, notices: 1 }, /^body\.notices: must be a boolean$/, 'FIELD_TYPE'],
  ['notices null', { ...valid, notices: null }, /^body\.notices: must be a boolean$/, 'FIELD_TYPE'],
  ['auth not an object', { ...valid, auth: 'basic' }, /^body\.auth: must be an object$/, 'FIELD_TYPE'],
  ['auth array', { ...valid, auth: [] }, /^body\.auth: must be an object$/, 'FIELD_TYPE'],
  ['auth without type', { ...valid, auth: { basic: { username: 'u', password: 'p' } } }, /^body\.auth\.type: required/, 'FIELD_REQUIRED'],
  [
    'auth type unknown',
    { ...valid, auth: { type: 'digest' } },
    /^body\.auth\.type: must be "basic", "header", "oauth2" or "mtls"$/,
    'FIELD_INVALID',
  ],
  ['auth type not a string', { ...valid, auth: { type: 1 } }, /^body\.auth\.type: must be a string$/, 'FIELD_TYPE'],
  ['auth basic missing', { ...valid, auth: { type: 'basic' } }, /^body\.auth\.basic: required when type is "basic"$/, 'FIELD_REQUIRED'],
  ['auth header missing', { ...valid, auth: { type: 'header' } }, /^body\.auth\.header: required when type is "header"$/, 'FIELD_REQUIRED'],
  [
    'auth both',
    { ...valid, auth: { type: 'basic', basic: { username: 'u', password: 'p' }, header: { type: 'Bearer', credentials: 'x' } } },
    /^body\.auth\.header: not allowed when type is "basic"$/,
    'FIELD_INVALID',
  ],
  [
    'auth unknown member',
    { ...valid, auth: { type: 'basic', basic: { username: 'u', password: 'p' }, realm: 'x' } },
    /^body\.auth: unknown field "realm"$/,
    'FIELD_UNKNOWN',
  ],
  ['auth basic not an object', { ...valid, auth: { type: 'basic', basic: 'u:p' } }, /^body\.auth\.basic: must be an object$/, 'FIELD_TYPE'],
  [
    'auth basic password missing',
    { ...valid, auth: { type: 'basic', basic: { username: 'u' } } },
    /^body\.auth\.basic\.password: required$/,
    'FIELD_REQUIRED',
  ],
  [
    'auth basic username missing',
    { ...valid, auth: { type: 'basic', basic: { password: 'p' } } },
    /^body\.auth\.basic\.username: required$/,
    'FIELD_REQUIRED',
  ],
  [
    'auth basic password number',
    { ...valid, auth: { type: 'basic', basic: { username: 'u', password: 1234 } } },
    /^body\.auth\.basic\.password: must be a string$/,
    'FIELD_TYPE',
  ],
  [
    'auth basic extra member',
    { ...valid, auth: { type: 'basic', basic: { username: 'u', password: 'p', domain: 'd' } } },
    /^body\.auth\.basic: unknown field "domain"$/,
    'FIELD_UNKNOWN',
  ],
  [
    'auth basic username colon',
    { ...valid, auth: { type: 'basic', basic: { username: 'a:b', password: 'p' } } },
    /^body\.auth\.basic\.username: must not contain ":"$/,
    'FIELD_INVALID',
  ],
  [
    'auth basic password newline',
    { ...valid, auth: { type: 'basic', basic: { username: 'u', password: 'p\n' } } },
    /^body\.auth\.basic\.password: must not contain control characters$/,
    'FIELD_INVALID',
  ],
  [
    'auth header credentials missing',
    { ...valid, auth: { type: 'header', header: { type: 'Bearer' } } },
    /^body\.auth\.header\.credentials: required$/,
    'FIELD_REQUIRED',
  ],
  [
    'auth header type missing',
    { ...valid, auth: { type: 'header', header: { credentials: 'x' } } },
    /^body\.auth\.header\.type: required$/,
    'FIELD_REQUIRED',
  ],
  [
    'auth header type with space',
    { ...valid, auth: { type: 'header', header: { type: 'Bearer x', credentials: 'y' } } },
    /^body\.auth\.header\.type: must be an authentication scheme/,
    'FIELD_INVALID',
  ],
  [
    'auth header type empty',
    { ...valid, auth: { type: 'header', header: { type: '', credentials: 'y' } } },
    /^body\.auth\.header\.type: must be an authentication scheme/,
    'FIELD_INVALID',
  ],
  [
    'auth header credentials empty',
    { ...valid, auth: { type: 'header', header: { type: 'Bearer', credentials: '' } } },
    /^body\.auth\.header\.credentials: must be non-empty visible ASCII/,
    'FIELD_INVALID',
  ],
  [
    'auth header credentials CRLF',
    { ...valid, auth: { type: 'header', header: { type: 'Bearer', credentials: 'x\r\nX-Evil: 1' } } },
    /^body\.auth\.header\.credentials: must be non-empty visible ASCII/,
    'FIELD_INVALID',
  ],
  [
    'auth header credentials non-ASCII',
    { ...valid, auth: { type: 'header', header: { type: 'Bearer', credentials: 'tökén' } } },
    /^body\.auth\.header\.credentials: must be non-empty visible ASCII/,
    'FIELD_INVALID',
  ],
  [
    'auth header extra member',
    { ...valid, auth: { type: 'header', header: { type: 'Bearer', credentials: 'x', name: 'X-Api-Key' } } },
    /^body\.auth\.header: unknown field "name"$/,
    'FIELD_UNKNOWN',
  ],
  ['extensions not an object', { ...valid, extensions: 'x' }, /^body\.extensions: must be an object$/, 'FIELD_TYPE'],
  ['extensions array', { ...valid, extensions: [1] }, /^body\.extensions: must be an object$/, 'FIELD_TYPE'],
  [
    'extension name uppercase',
    { ...valid, extensions: { Project: 'x' } },
    /^body\.extensions\.Project: extension names are 1 to 20 lowercase letters or digits/,
    'FIELD_INVALID',
  ],
  ['extension name dash', { ...valid, extensions: { 'my-ext': 'x' } }, /^body\.extensions\.my-ext: extension names/, 'FIELD_INVALID'],
  [
    'extension name underscore',
    { ...valid, extensions: { data_base64: 'x' } },
    /^body\.extensions\.data_base64: extension names/,
    'FIELD_INVALID',
  ],
  ['extension name empty', { ...valid, extensions: { '': 'x' } }, /^body\.extensions\.: extension names/, 'FIELD_INVALID'],
  [
    'extension name too long',
    { ...valid, extensions: { abcdefghijklmnopqrstu: 'x' } },
    /^body\.extensions\.abcdefghijklmnopqrstu: extension names/,
    'FIELD_INVALID',
  ],
  ...['id', 'source', 'type', 'specversion', 'data', 'time', 'subject', 'datacontenttype', 'dataschema', 'schemaurl', 'eventtype'].map(
    (name): [string, Record<string, unknown>, RegExp, ErrorCode] => [
      `extension name ${name}`,
      { ...valid, extensions: { [name]: 'x' } },
      new RegExp(`^body\\.extensions\\.${name}: is a CloudEvents context attribute`),
      'FIELD_INVALID',
    ],
  ),
  [
    'extension value null',
    { ...valid, extensions: { a: null } },
    /^body\.extensions\.a: must be a string, an integer or a boolean$/,
    'FIELD_TYPE',
  ],
  [
    'extension value object',
    { ...valid, extensions: { a: { b: 1 } } },
    /^body\.extensions\.a: must be a string, an integer or a boolean$/,
    'FIELD_TYPE',
  ],
  [
    'extension value array',
    { ...valid, extensions: { a: ['x'] } },
    /^body\.extensions\.a: must be a string, an integer or a boolean$/,
    'FIELD_TYPE',
  ],
  [
    'extension value fraction',
    { ...valid, extensions: { a: 1.5 } },
    /^body\.extensions\.a: numbers must be integers from -2147483648 to 2147483647/,
    'FIELD_INVALID',
  ],
  [
    'extension value over int32',
    { ...valid, extensions: { a: 2147483648 } },
    /^body\.extensions\.a: numbers must be integers/,
    'FIELD_INVALID',
  ],
  [
    'extension value under int32',
    { ...valid, extensions: { a: -2147483649 } },
    /^body\.extensions\.a: numbers must be integers/,
    'FIELD_INVALID',
  ],
  [
    'extension value control character',
    { ...valid, extensions: { a: 'x\u0007' } },
    /^body\.extensions\.a: must not contain control characters/,
    'FIELD_INVALID',
  ],
  ['unknown field', { ...valid, colour: 'blue' }, /^body: unknown field "colour"$/, 'FIELD_UNKNOWN'],
  ...overLimits(valid).map(([label, body, message]): [string, Record<string, unknown>, RegExp, ErrorCode] => [
    label,
    body,
    message,
    'FIELD_INVALID',
  ]),
];

for (const backend of testBackends()) {
  describeOn(backend, `/eventmatch errors (${backend.name})`, () => {
    const app = appOn(backend, startApp);
    let uuid: string;
    before(async () => {
      uuid = (await app.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: valid })).json<{ uuid: string }>().uuid;
    });

    const message = (body: string) => (JSON.parse(body) as { message: string }).message;
    const codeOf = (body: string) => (JSON.parse(body) as { code: string }).code;

    it('answers 400 naming the field, on create, for each invalid input', async () => {
      for (const [label, body, expected, code] of INVALID) {
        const response = await app.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: body });
        assert.equal(response.statusCode, 400, `${label}: ${response.body}`);
        // A JSONPath error also says where reading stopped, as a number.
        const members =
          code === 'JSONPATH_SYNTAX' ? ['statusCode', 'error', 'code', 'message', 'position'] : ['statusCode', 'error', 'code', 'message'];
        assert.deepEqual(Object.keys(response.json()), members);
        assert.equal(response.json<{ code: string }>().code, code, label);
        assert.equal(response.json<{ error: string }>().error, 'Bad Request');
        assert.match(message(response.body), expected, label);
      }
      const listed = await app.inject({ method: 'GET', url: '/eventmatch', headers: USER });
      assert.equal(listed.json<unknown[]>().length, 1, 'nothing invalid was stored');
    });

    it('answers 400 for the same inputs on update, and changes nothing', async () => {
      const before = (await app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: USER })).body;
      for (const [label, body, expected, code] of INVALID) {
        if (label.endsWith('missing') && !label.startsWith('auth') && !label.startsWith('extension')) continue; // every field is optional on update
        const response = await app.inject({ method: 'PUT', url: `/eventmatch/${uuid}`, headers: USER, payload: body });
        assert.equal(response.statusCode, 400, `${label}: ${response.body}`);
        assert.match(message(response.body), expected, label);
        assert.equal(response.json<{ code: string }>().code, code, label);
      }
      assert.equal((await app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: USER })).body, before);
    });

    it('stores fields at their limits, on create and on update', async () => {
      const created = await app.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: AT_LIMITS });
      assert.equal(created.statusCode, 200, created.body.slice(0, 300));
      const record = created.json<typeof AT_LIMITS & { uuid: string }>();
      assert.deepEqual(
        [record.name, record.target_url, record.auth, record.extensions],
        [AT_LIMITS.name, AT_LIMITS.target_url, AT_LIMITS.auth, AT_LIMITS.extensions],
      );
      const headerAuth = header('B'.repeat(1024), 'c'.repeat(1024));
      const updated = await app.inject({
        method: 'PUT',
        url: `/eventmatch/${record.uuid}`,
        headers: USER,
        payload: { ...AT_LIMITS, name: 'x'.repeat(200), auth: headerAuth },
      });
      assert.equal(updated.statusCode, 200, updated.body.slice(0, 300));
      assert.deepEqual(updated.json<{ auth: unknown }>().auth, headerAuth);
      await app.inject({ method: 'DELETE', url: `/eventmatch/${record.uuid}`, headers: USER });
    });

    it('reports the position of a JSONPath error', async () => {
      const response = await app.inject({
        method: 'PUT',
        url: `/eventmatch/${uuid}`,
        headers: USER,
        payload: { jsonpath: '$.data[?@.size > ]' },
      });
      assert.equal(response.statusCode, 400);
      assert.match(message(response.body), /^body\.jsonpath: invalid JSONPath at position 17: /);
      assert.equal(codeOf(response.body), 'JSONPATH_SYNTAX');
      assert.equal(JSON.parse(response.body).position, 17);
    });

    it('answers 400 when the body is not a JSON object', async () => {
      for (const [method, url] of [
        ['POST', '/eventmatch'],
        ['PUT', `/eventmatch/${uuid}`],
        ['POST', '/eventmatch/test'],
        ['POST', `/eventmatch/${uuid}/test`],
      ] as const) {
        for (const payload of ['[]', '[{"name":"n"}]', '"text"', '42', 'null', 'true']) {
          const response = await app.inject({ method, url, headers: { ...USER, 'content-type': 'application/json' }, payload });
          assert.equal(response.statusCode, 400, `${method} ${url} ${payload}`);
          assert.equal(message(response.body), 'body: must be an object', `${method} ${url} ${payload}`);
          assert.equal(codeOf(response.body), 'FIELD_TYPE');
        }
      }
    });

    it('answers 400 for malformed JSON and for an empty JSON body', async () => {
      const malformed = await app.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: { ...USER, 'content-type': 'application/json' },
        payload: '{"name": "n",',
      });
      assert.equal(malformed.statusCode, 400);
      assert.match(message(malformed.body), /^body: not valid JSON/);
      assert.equal(codeOf(malformed.body), 'BODY_NOT_JSON');
      const empty = await app.inject({
        method: 'PUT',
        url: `/eventmatch/${uuid}`,
        headers: { ...USER, 'content-type': 'application/json' },
        payload: '',
      });
      assert.equal(empty.statusCode, 400);
      assert.match(message(empty.body), /^body: /);
      assert.equal(codeOf(empty.body), 'BODY_NOT_JSON');
      const none = await app.inject({ method: 'POST', url: '/eventmatch', headers: USER });
      assert.equal(none.statusCode, 400);
      assert.equal(message(none.body), 'body: must be an object');
    });

    it('answers 415 for a body that is not application/json', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/cloudevents+json']) {
        for (const [method, url] of [
          ['POST', '/eventmatch'],
          ['PUT', `/eventmatch/${uuid}`],
          ['POST', '/eventmatch/test'],
        ] as const) {
          const response = await app.inject({ method, url, headers: { ...USER, 'content-type': type }, payload: JSON.stringify(valid) });
          assert.equal(response.statusCode, 415, `${type} ${method} ${url}: ${response.body}`);
          assert.deepEqual(response.json(), {
            statusCode: 415,
            error: 'Unsupported Media Type',
            code: 'MEDIA_TYPE_UNSUPPORTED',
            message: 'body: unsupported Content-Type; send application/json',
          });
        }
      }
      const charset = await app.inject({
        method: 'PUT',
        url: `/eventmatch/${uuid}`,
        headers: { ...USER, 'content-type': 'application/json; charset=utf-8' },
        payload: '{"name":"n"}',
      });
      assert.equal(charset.statusCode, 200, 'parameters of application/json are fine');
    });

    it('answers 413 for a body over the limit', async () => {
      const small = await startApp(app.handle, 256);
      try {
        const body = { ...valid, name: 'x'.repeat(300) };
        const response = await small.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: body });
        assert.equal(response.statusCode, 413);
        assert.equal(response.json<{ error: string }>().error, 'Payload Too Large');
        assert.match(message(response.body), /^body: larger than the limit/);
        assert.equal(codeOf(response.body), 'BODY_TOO_LARGE');
        const fits = await small.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: valid });
        assert.equal(fits.statusCode, 200);
      } finally {
        await small.close();
      }
    });

    it('answers 400 naming the query parameter for a bad limit or offset', async () => {
      const cases: Array<[string, RegExp]> = [
        ['limit=0', /^querystring\.limit: must be an integer from 1 to 1000$/],
        ['limit=1001', /^querystring\.limit: must be an integer from 1 to 1000$/],
        ['limit=-1', /^querystring\.limit: /],
        ['limit=ten', /^querystring\.limit: /],
        ['limit=1.5', /^querystring\.limit: /],
        ['limit=', /^querystring\.limit: /],
        ['offset=-1', /^querystring\.offset: must be an integer of at least 0$/],
        ['offset=x', /^querystring\.offset: /],
        ['limit=1&limit=2', /^querystring\.limit: /],
        ['page=2', /^querystring: unknown field "page"$/],
      ];
      for (const [query, expected] of cases) {
        const response = await app.inject({ method: 'GET', url: `/eventmatch?${query}`, headers: USER });
        assert.equal(response.statusCode, 400, query);
        assert.match(message(response.body), expected, query);
        assert.equal(codeOf(response.body), 'QUERY_PARAMETER_INVALID', query);
      }
    });
  });
}
