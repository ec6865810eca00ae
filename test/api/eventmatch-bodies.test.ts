/**
 * /eventmatch reads request bodies as /receive reads JSON (request-body/json-body.ts and
 * media-type.ts): the media type and its charset, UTF-8, nesting, `__proto__` and repeated
 * members; and it refuses content codings instead of decoding them. Real HTTP requests.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { servedEventmatchApp } from '../support/app.js';
import { describeOn, testBackends } from '../support/database.js';
import { assertErrorShape, rawSender } from './raw-http.js';

const USER = { 'http-remote-user': 'alice' };
const JSON_TYPE = { ...USER, 'content-type': 'application/json' };
const valid = { name: 'n', jsonpath: '$.data', target_url: 'https://example.org/hook' };
const event = { specversion: '1.0', id: '1', source: '/s', type: 't', data: { x: 1 } };
/** A JSON text of `{"a": … {"a": 1} …}`, `levels` objects deep. */
const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{"a":1}${'}'.repeat(levels - 1)}`;

for (const backend of testBackends()) {
  describeOn(backend, `/eventmatch request bodies (${backend.name})`, () => {
    const served = servedEventmatchApp(backend, USER, valid);

    const send = rawSender(() => served.port);
    const count = async () => (await served.app.inject({ method: 'GET', url: '/eventmatch', headers: USER })).json<unknown[]>().length;
    const record = async () => (await served.app.inject({ method: 'GET', url: `/eventmatch/${served.uuid}`, headers: USER })).body;
    const routesWithBodies = () =>
      [
        ['POST', '/eventmatch', JSON.stringify(valid)],
        ['PUT', `/eventmatch/${served.uuid}`, '{"name": "renamed"}'],
        ['DELETE', `/eventmatch/${served.uuid}`, '{}'],
        ['POST', '/eventmatch/test', JSON.stringify({ jsonpath: '$', event })],
        ['POST', `/eventmatch/${served.uuid}/test`, JSON.stringify(event)],
      ] as const;

    it('takes application/json in any case, with parameters, in UTF-8 with or without a BOM', async () => {
      for (const [type, body] of [
        ['APPLICATION/JSON; Charset="UTF-8"', JSON.stringify(valid)],
        ['application/json;charset=utf8', JSON.stringify(valid)],
        ['application/json', `\ufeff${JSON.stringify(valid)}`],
      ] as const) {
        const response = await send('POST', '/eventmatch', { ...USER, 'content-type': type }, body);
        assert.equal(response.status, 200, `${type}: ${response.body}`);
      }
    });

    it('answers 415 to a charset other than UTF-8, another media type, or a body without one, on every route with a body', async () => {
      const before = [await count(), await record()];
      for (const [method, path, body] of routesWithBodies()) {
        const latin1 = await send(method, path, { ...USER, 'content-type': 'application/json; charset=iso-8859-1' }, body);
        assertErrorShape(
          latin1,
          415,
          /^content-type: charset "iso-8859-1" is not supported for JSON: send UTF-8/,
          'MEDIA_TYPE_UNSUPPORTED',
        );
        for (const headers of [{ ...USER, 'content-type': 'text/plain' }, USER]) {
          assertErrorShape(
            await send(method, path, headers, body),
            415,
            /^body: unsupported Content-Type; send application\/json$/,
            'MEDIA_TYPE_UNSUPPORTED',
          );
        }
      }
      assert.deepEqual([await count(), await record()], before, 'nothing created, changed or deleted');
    });

    it('answers 415 with Accept-Encoding: identity to a body with a content coding, and stores nothing', async () => {
      const before = [await count(), await record()];
      const text = JSON.stringify(valid);
      for (const [coding, body] of [
        ['gzip', gzipSync(text)],
        ['GZIP', gzipSync(text)],
        ['deflate', deflateSync(text)],
        ['br', brotliCompressSync(text)],
        ['gzip, identity', gzipSync(text)],
      ] as const) {
        for (const [method, path] of [
          ['POST', '/eventmatch'],
          ['PUT', `/eventmatch/${served.uuid}`],
          ['POST', '/eventmatch/test'],
        ]) {
          const response = await send(method!, path!, { ...JSON_TYPE, 'content-encoding': coding }, body);
          assertErrorShape(
            response,
            415,
            new RegExp(`^content-encoding: "${coding}" is not supported; send the body without a content coding$`),
            'CONTENT_ENCODING_UNSUPPORTED',
          );
          assert.equal(response.headers['accept-encoding'], 'identity');
        }
      }
      assert.deepEqual([await count(), await record()], before);
      const identity = await send('POST', '/eventmatch', { ...JSON_TYPE, 'content-encoding': 'identity' }, text);
      assert.equal(identity.status, 200, 'identity is no coding at all');
    });

    it('answers 400 to a body that is not UTF-8 instead of storing U+FFFD', async () => {
      const before = await count();
      const body = Buffer.concat([
        Buffer.from('{"name": "caf'),
        Buffer.from([0xe9]),
        Buffer.from(`", "jsonpath": "$", "target_url": "${valid.target_url}"}`),
      ]);
      assertErrorShape(
        await send('POST', '/eventmatch', JSON_TYPE, body),
        400,
        /^body: not valid UTF-8, which JSON requires$/,
        'BODY_NOT_JSON',
      );
      assert.equal(await count(), before);
    });

    it('answers 400 to a body nested deeper than an event may be (one level more on /eventmatch/test, whose event is inside)', async () => {
      const before = await record();
      assertErrorShape(
        await send('PUT', `/eventmatch/${served.uuid}`, JSON_TYPE, `{"disabled": ${nested(100)}}`),
        400,
        /^body: nested deeper than 100 levels$/,
        'BODY_TOO_DEEP',
      );
      assertErrorShape(
        await send('POST', `/eventmatch/${served.uuid}/test`, JSON_TYPE, nested(101)),
        400,
        /^body: nested deeper than 100 levels$/,
        'BODY_TOO_DEEP',
      );
      assertErrorShape(
        await send('POST', '/eventmatch/test', JSON_TYPE, `{"jsonpath": "$", "event": ${nested(101)}}`),
        400,
        /^body: nested deeper than 101 levels$/,
        'BODY_TOO_DEEP',
      );
      assert.equal(await record(), before);
      assert.equal((await send('POST', `/eventmatch/${served.uuid}/test`, JSON_TYPE, nested(100))).status, 200);
      assert.equal((await send('POST', '/eventmatch/test', JSON_TYPE, `{"jsonpath": "$", "event": ${nested(100)}}`)).status, 200);
    });

    it('reads a __proto__ member as a member, and a repeated member as its last value, as /receive does', async () => {
      const fields = `"name": "n", "jsonpath": "$", "target_url": "${valid.target_url}"`;
      assertErrorShape(
        await send('POST', '/eventmatch', JSON_TYPE, `{${fields}, "__proto__": {"isAdmin": true}}`),
        400,
        /^body: unknown field "__proto__"$/,
      );
      assertErrorShape(
        await send('POST', '/eventmatch', JSON_TYPE, `{${fields}, "auth": {"__proto__": {"type": "basic"}}}`),
        400,
        /^body\.auth: unknown field "__proto__"$/,
      );
      assertErrorShape(
        await send('POST', '/eventmatch', JSON_TYPE, `{${fields}, "extensions": {"__proto__": "x"}}`),
        400,
        /^body\.extensions\.__proto__: extension names are/,
      );
      const tried = await send('POST', '/eventmatch/test', JSON_TYPE, `{"jsonpath": "$['__proto__'].x", "event": {"__proto__": {"x": 1}}}`);
      assert.equal(tried.status, 200, tried.body);
      assert.deepEqual(JSON.parse(tried.body), { matches: true, dialect: 'rfc9535', values: [1], paths: ["$['__proto__']['x']"] });
      assert.equal(({} as Record<string, unknown>).isAdmin, undefined, 'no prototype was touched');

      const repeated = await send('POST', '/eventmatch', JSON_TYPE, `{"name": "first", ${fields.replace('"n"', '"second"')}}`);
      assert.equal(repeated.status, 200, repeated.body);
      assert.equal(JSON.parse(repeated.body).name, 'second');
    });
  });
}
