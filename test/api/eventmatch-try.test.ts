import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { DatabaseHandle } from '../../src/db/connect.js';
import type { DialectMode } from '../../src/jsonpath/index.js';
import { appOn, startEventmatchApp } from '../support/app.js';
import { describeOn, testBackends } from '../support/database.js';

const startApp = (database: DatabaseHandle, dialectMode: DialectMode = 'auto') => startEventmatchApp(database, { dialectMode });

const USER = { 'http-remote-user': 'alice' };
const event = {
  specversion: '1.0',
  id: 'e1',
  source: '/ingest',
  type: 'org.pacifica.metadata.ingest',
  data: [
    { destinationTable: 'Files', name: 'small.txt', size: 50, mimetype: 'text/plain' },
    { destinationTable: 'Files', name: 'large.txt', size: 500, mimetype: 'text/plain', meta: { size: 1000, name: 'inner' } },
  ],
};
/** An object `levels` deep, with `x` at the bottom. */
const deep = (levels: number): object => (levels === 1 ? { x: 1 } : { a: deep(levels - 1) });
// Valid in both dialects with different meanings: jsonpath2 filters the items themselves,
// RFC 9535 the items' children.
const AMBIGUOUS = '$.data[*][?(@.size > 100)].name';

for (const backend of testBackends()) {
  describeOn(backend, `/eventmatch try-it (${backend.name})`, () => {
    const app = appOn(backend, startApp);

    const tryIt = (target: Pick<FastifyInstance, 'inject'>, jsonpath: string, body: unknown = event) =>
      target.inject({ method: 'POST', url: '/eventmatch/test', headers: USER, payload: { jsonpath, event: body } });

    it('answers matches, dialect, values and normalized paths in RFC 9535', async () => {
      const response = await tryIt(app, '$.data[?@.size > 100].name');
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { matches: true, dialect: 'rfc9535', values: ['large.txt'], paths: ["$['data'][1]['name']"] });
      assert.deepEqual((await tryIt(app, 'type')).json(), {
        matches: true,
        dialect: 'rfc9535',
        values: [event.type],
        paths: ["$['type']"],
      });
    });

    it('answers in jsonpath2 for an expression only it accepts', async () => {
      const response = await tryIt(app, '$.data[*][?(@.mimetype = "text/plain")].name');
      assert.deepEqual(response.json(), {
        matches: true,
        dialect: 'jsonpath2',
        values: ['small.txt', 'large.txt'],
        paths: ["$['data'][0]['name']", "$['data'][1]['name']"],
      });
    });

    it('follows NOTIFICATIONS_JSONPATH_DIALECT for an expression both dialects accept', async () => {
      assert.deepEqual((await tryIt(app, AMBIGUOUS)).json(), {
        matches: true,
        dialect: 'rfc9535',
        values: ['inner'],
        paths: ["$['data'][1]['meta']['name']"],
      });
      const migrating = await startApp(app.handle, 'jsonpath2-first');
      try {
        assert.deepEqual((await tryIt(migrating, AMBIGUOUS)).json(), {
          matches: true,
          dialect: 'jsonpath2',
          values: ['large.txt'],
          paths: ["$['data'][1]['name']"],
        });
      } finally {
        await migrating.close();
      }
    });

    it('evaluates `..` to the bottom of a document nested as deeply as allowed', async () => {
      for (const jsonpath of ['$..x', '$..[?@.x]']) {
        const response = await tryIt(app, jsonpath, deep(100));
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(response.json<{ matches: boolean }>().matches, true);
      }
    });

    it('answers matches: false with nothing selected', async () => {
      assert.deepEqual((await tryIt(app, '$.data[?@.size > 10000]')).json(), { matches: false, dialect: 'rfc9535', values: [], paths: [] });
    });

    it('answers 400 for an invalid expression, with its position, and for a bad body', async () => {
      const invalid = await tryIt(app, '$.data[?@.size > ]');
      assert.equal(invalid.statusCode, 400);
      assert.match(invalid.json<{ message: string }>().message, /^body\.jsonpath: invalid JSONPath at position 17: /);
      assert.equal(invalid.json<{ position: number }>().position, 17, 'the position as a number, for a client to mark');
      const cases: Array<[unknown, RegExp]> = [
        [{ event }, /^body\.jsonpath: required$/],
        [{ jsonpath: '$' }, /^body\.event: required$/],
        [{ jsonpath: '$', event: [event] }, /^body\.event: must be an object$/],
        // The body is read as /receive reads one, its event one level down: refused as a whole.
        [{ jsonpath: '$..x', event: deep(101) }, /^body: nested deeper than 101 levels$/],
        [{ jsonpath: '$', event: 'text' }, /^body\.event: must be an object$/],
        [{ jsonpath: 5, event }, /^body\.jsonpath: must be a string$/],
        [{ jsonpath: '$', event, extra: 1 }, /^body: unknown field "extra"$/],
      ];
      for (const [payload, expected] of cases) {
        const response = await app.inject({ method: 'POST', url: '/eventmatch/test', headers: USER, payload: payload as object });
        assert.equal(response.statusCode, 400, JSON.stringify(payload));
        assert.match(response.json<{ message: string }>().message, expected);
      }
    });

    it('gives the position of a JSONPath error in UTF-16 code units, as JavaScript indexes the expression', async () => {
      const jsonpath = '$.data[?@.name == "😀😀" &&]';
      const response = await tryIt(app, jsonpath);
      assert.equal(response.statusCode, 400);
      const { position, message } = response.json<{ position: number; message: string }>();
      assert.equal(jsonpath[position], ']', message);
      assert.match(message, new RegExp(`at position ${position}: `));
    });

    it("tries a subscription's expression in the dialect it was written in, whatever the setting is now", async () => {
      const migrating = await startApp(app.handle, 'jsonpath2-first');
      const created = await migrating.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: USER,
        payload: { name: 'n', jsonpath: AMBIGUOUS, target_url: 'http://127.0.0.1/' },
      });
      await migrating.close();
      const { uuid } = created.json<{ uuid: string }>();
      const strict = await startApp(app.handle, 'rfc9535');
      try {
        const response = await strict.inject({ method: 'POST', url: `/eventmatch/${uuid}/test`, headers: USER, payload: event });
        assert.equal(response.statusCode, 200);
        assert.deepEqual(response.json(), { matches: true, dialect: 'jsonpath2', values: ['large.txt'], paths: ["$['data'][1]['name']"] });
        const miss = await strict.inject({
          method: 'POST',
          url: `/eventmatch/${uuid}/test`,
          headers: USER,
          payload: { data: [{ size: 1, name: 'x' }] },
        });
        assert.deepEqual(miss.json(), { matches: false, dialect: 'jsonpath2', values: [], paths: [] });
      } finally {
        await strict.close();
      }
      const standard = (
        await app.inject({
          method: 'POST',
          url: '/eventmatch',
          headers: USER,
          payload: { name: 'n', jsonpath: AMBIGUOUS, target_url: 'http://127.0.0.1/' },
        })
      ).json<{ uuid: string }>();
      const response = await app.inject({ method: 'POST', url: `/eventmatch/${standard.uuid}/test`, headers: USER, payload: event });
      assert.deepEqual(response.json(), { matches: true, dialect: 'rfc9535', values: ['inner'], paths: ["$['data'][1]['meta']['name']"] });
    });

    it('tries a disabled subscription too, and logs no event and no match', async () => {
      const { uuid } = (
        await app.inject({
          method: 'POST',
          url: '/eventmatch',
          headers: USER,
          payload: { name: 'n', jsonpath: '$.id', target_url: 'http://127.0.0.1/', disabled: true },
        })
      ).json<{ uuid: string }>();
      const response = await app.inject({ method: 'POST', url: `/eventmatch/${uuid}/test`, headers: USER, payload: event });
      assert.deepEqual(response.json(), { matches: true, dialect: 'rfc9535', values: ['e1'], paths: ["$['id']"] });
      for (const table of ['events', 'matches', 'attempts'] as const) {
        const { count } = await app.handle.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(count), 0, `${table} is empty`);
      }
    });
  });
}
