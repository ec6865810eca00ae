/**
 * Every error answer has our shape, `{"statusCode", "error", "message"}`, including those that
 * Fastify's router and body reader and Node's HTTP parser give before any route of ours runs.
 * Real HTTP over node:net, since most of these requests no HTTP client would send.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { servedEventmatchApp } from '../support/app.js';
import { describeOn, testBackends } from '../support/database.js';
import { assertErrorShape, exchange, exchangeOne, rawSender, request } from './raw-http.js';

const USER = { 'http-remote-user': 'alice' };
const JSON_TYPE = { ...USER, 'content-type': 'application/json' };
const valid = { name: 'n', jsonpath: '$.data', target_url: 'https://example.org/hook' };
const MAX_BODY = 1024;

for (const backend of testBackends()) {
  describeOn(backend, `/eventmatch error answers over HTTP (${backend.name})`, () => {
    const served = servedEventmatchApp(backend, USER, valid, MAX_BODY);

    const send = rawSender(() => served.port);
    const state = async () => (await served.app.inject({ method: 'GET', url: '/eventmatch', headers: USER })).body;

    it('answers 404 to an unknown route and 405 with Allow to a method a path does not take', async () => {
      assertErrorShape(await send('GET', '/nothing/here', USER), 404, /^no such route: GET \/nothing\/here$/, 'ROUTE_NOT_FOUND');
      assertErrorShape(await send('POST', '/eventmatch/x/y/z', JSON_TYPE, '{}'), 404, undefined, 'ROUTE_NOT_FOUND');
      for (const [method, path, allow] of [
        ['PATCH', '/eventmatch', 'GET, HEAD, POST'],
        ['DELETE', '/eventmatch', 'GET, HEAD, POST'],
        ['PATCH', `/eventmatch/${served.uuid}`, 'DELETE, GET, HEAD, PUT'],
        ['POST', `/eventmatch/${served.uuid}`, 'DELETE, GET, HEAD, PUT'],
        ['GET', `/eventmatch/${served.uuid}/test`, 'POST'],
        ['PATCH', '/eventmatch/test', 'DELETE, GET, HEAD, POST, PUT'],
      ] as const) {
        const response = await send(method, path, USER);
        assertErrorShape(response, 405, new RegExp(`^method ${method} not allowed on ${path}; use ${allow}$`), 'METHOD_NOT_ALLOWED');
        assert.equal(response.headers.allow, allow, `${method} ${path}`);
      }
    });

    it('answers 400 to malformed JSON, to an empty JSON body and to a __proto__ member', async () => {
      const before = await state();
      assertErrorShape(await send('POST', '/eventmatch', JSON_TYPE, '{"name": "n",'), 400, /^body: not valid JSON/, 'BODY_NOT_JSON');
      assertErrorShape(
        await send('PUT', `/eventmatch/${served.uuid}`, JSON_TYPE, '{"name": }'),
        400,
        /^body: not valid JSON/,
        'BODY_NOT_JSON',
      );
      assertErrorShape(await send('POST', '/eventmatch', JSON_TYPE, ''), 400, /^body: not valid JSON \(empty\)$/, 'BODY_NOT_JSON');
      assertErrorShape(
        await send('PUT', `/eventmatch/${served.uuid}`, { ...JSON_TYPE, 'transfer-encoding': 'chunked' }, '0\r\n\r\n'),
        400,
        /^body: not valid JSON \(empty\)$/,
        'BODY_NOT_JSON',
      );
      const proto = JSON.stringify(valid).replace('{', '{"__proto__": {"admin": true}, ');
      assertErrorShape(await send('POST', '/eventmatch', JSON_TYPE, proto), 400, /^body: unknown field "__proto__"$/, 'FIELD_UNKNOWN');
      assert.equal(await state(), before);
    });

    it('answers 400 to a path that is not valid percent-encoding', async () => {
      for (const [method, path] of [
        ['GET', '/eventmatch/%zz'],
        ['PUT', '/eventmatch/%zz'],
        ['DELETE', '/eventmatch/%zz'],
        ['POST', '/eventmatch/%zz/test'],
        ['GET', `/eventmatch/${served.uuid.slice(0, -2)}%E0%A4`],
      ] as const) {
        const body = method === 'PUT' || method === 'POST' ? '{}' : undefined;
        assertErrorShape(
          await send(method, path, JSON_TYPE, body),
          400,
          /^path: \S+ is not a valid URL path \(a % must start an escape of two hex digits, spelling UTF-8\)$/,
          'PATH_INVALID',
        );
      }
    });

    it('answers 404, like any unknown subscription, to a path uuid that is malformed or however long', async () => {
      const before = await state();
      for (const given of ['not-a-uuid', `${served.uuid}0`, 'a'.repeat(101), 'a'.repeat(10_000), '%41'.repeat(3_000)]) {
        const shown = given.replace(/%41/g, 'A');
        for (const [method, path, body] of [
          ['GET', `/eventmatch/${given}`, undefined],
          ['PUT', `/eventmatch/${given}`, '{"name": "x"}'],
          ['DELETE', `/eventmatch/${given}`, undefined],
          ['POST', `/eventmatch/${given}/test`, '{}'],
        ] as const) {
          const message = assertErrorShape(await send(method, path, JSON_TYPE, body), 404, undefined, 'SUBSCRIPTION_NOT_FOUND');
          assert.equal(message, `subscription ${shown} not found`, `${method} ${given.slice(0, 20)}…`);
        }
      }
      assert.equal(await state(), before);
    });

    it('answers 400 when the body and its Content-Length differ', async () => {
      const before = await state();
      const body = JSON.stringify(valid);
      // Shorter: the bytes past it read as a request of their own, which is not HTTP.
      const shorter = await exchange(served.port, request('POST', '/eventmatch', { ...JSON_TYPE, 'content-length': '10' }, body));
      assert.ok(shorter.length >= 1);
      for (const response of shorter) assertErrorShape(response, 400);
      // Longer: the connection ends before the body does.
      assertErrorShape(
        await exchangeOne(served.port, request('POST', '/eventmatch', { ...JSON_TYPE, 'content-length': String(body.length + 20) }, body), {
          end: true,
        }),
        400,
        /^body: the connection ended before the body was complete/,
        'BODY_INCOMPLETE',
      );
      for (const length of ['abc', '-1', '10, 20']) {
        assertErrorShape(
          await send('POST', '/eventmatch', { ...JSON_TYPE, 'content-length': length }, body),
          400,
          /^request: not valid HTTP\/1\.1 \(/,
          'REQUEST_INVALID',
        );
      }
      assert.equal(await state(), before);
    });

    it('answers 413 to a body over the limit, announced or not', async () => {
      const big = JSON.stringify({ ...valid, name: 'x'.repeat(MAX_BODY) });
      const limit = new RegExp(`^body: larger than the limit of ${MAX_BODY} bytes \\(NOTIFICATIONS_MAX_BODY\\)$`);
      assertErrorShape(await send('POST', '/eventmatch', JSON_TYPE, big), 413, limit, 'BODY_TOO_LARGE');
      const chunked = `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`;
      assertErrorShape(
        await send('PUT', `/eventmatch/${served.uuid}`, { ...JSON_TYPE, 'transfer-encoding': 'chunked' }, chunked),
        413,
        limit,
        'BODY_TOO_LARGE',
      );
    });

    it('answers what is not HTTP at all, or has too large a head, in the same shape', async () => {
      assertErrorShape(
        await exchangeOne(served.port, Buffer.from('HELLO\r\n\r\n')),
        400,
        /^request: not valid HTTP\/1\.1 \(/,
        'REQUEST_INVALID',
      );
      assertErrorShape(
        await exchangeOne(served.port, request('GET', '/eventmatch', { ...USER, 'x-filler': 'x'.repeat(20_000) })),
        431,
        /^headers: /,
        'HEADERS_TOO_LARGE',
      );
      const both = { ...JSON_TYPE, 'content-length': '2', 'transfer-encoding': 'chunked' };
      assertErrorShape(
        await exchangeOne(served.port, request('POST', '/eventmatch', both, '2\r\n{}\r\n0\r\n\r\n')),
        400,
        /^request: not valid HTTP\/1\.1 \(/,
        'REQUEST_INVALID',
      );
    });
  });
}
