/**
 * `rate_limit` over HTTP: accepted on create and PUT (partial; null clears it), refused with
 * the catalogue's codes naming `body.rate_limit`, and shown in every record answer.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { appOn, startEventmatchApp } from '../support/app.js';
import { describeOn, testBackends } from '../support/database.js';

const USER = { 'http-remote-user': 'alice' };
const sample = (extra: Record<string, unknown> = {}) => ({ name: 'n', jsonpath: '$', target_url: 'https://example.org/hook', ...extra });

for (const backend of testBackends()) {
  describeOn(backend, `rate_limit of a subscription (${backend.name})`, () => {
    const app = appOn(backend, startEventmatchApp);

    const send = (method: 'POST' | 'PUT' | 'GET' | 'DELETE', url: string, payload?: object) =>
      app.inject({ method, url, headers: USER, ...(payload === undefined ? {} : { payload }) });
    const create = async (extra: Record<string, unknown> = {}) => {
      const response = await send('POST', '/eventmatch', sample(extra));
      assert.equal(response.statusCode, 200, response.body);
      return response.json<{ uuid: string; rate_limit: number | null }>();
    };

    it('defaults to null, and is kept as sent on create', async () => {
      assert.equal((await create()).rate_limit, null);
      assert.equal((await create({ rate_limit: 1 })).rate_limit, 1);
      assert.equal((await create({ rate_limit: 10_000 })).rate_limit, 10_000);
      assert.equal((await create({ rate_limit: null })).rate_limit, null);
    });

    it('is shown by GET, the list, PUT and DELETE', async () => {
      const { uuid } = await create({ rate_limit: 5 });
      assert.equal((await send('GET', `/eventmatch/${uuid}`)).json<{ rate_limit: number }>().rate_limit, 5);
      const listed = (await send('GET', '/eventmatch?limit=1000')).json<Array<{ uuid: string; rate_limit: number }>>();
      assert.equal(listed.find((r) => r.uuid === uuid)?.rate_limit, 5);
      assert.equal((await send('PUT', `/eventmatch/${uuid}`, { name: 'renamed' })).json<{ rate_limit: number }>().rate_limit, 5);
      assert.equal((await send('DELETE', `/eventmatch/${uuid}`)).json<{ rate_limit: number }>().rate_limit, 5);
    });

    it('a PUT changes it, leaves it when absent, and clears it with null', async () => {
      const { uuid } = await create({ rate_limit: 5 });
      const put = async (body: object) => {
        const response = await send('PUT', `/eventmatch/${uuid}`, body);
        assert.equal(response.statusCode, 200, response.body);
        return response.json<{ rate_limit: number | null; name: string }>();
      };
      assert.equal((await put({ rate_limit: 20 })).rate_limit, 20);
      assert.equal((await put({ name: 'other' })).rate_limit, 20);
      const cleared = await put({ rate_limit: null });
      assert.equal(cleared.rate_limit, null);
      assert.equal(cleared.name, 'other');
      assert.equal((await send('GET', `/eventmatch/${uuid}`)).json<{ rate_limit: number | null }>().rate_limit, null);
    });

    it('refuses what is not an integer from 1 to 10000, naming body.rate_limit', async () => {
      const { uuid } = await create();
      const cases: Array<[unknown, string]> = [
        ['5', 'FIELD_TYPE'],
        [true, 'FIELD_TYPE'],
        [{}, 'FIELD_TYPE'],
        [[5], 'FIELD_TYPE'],
        [1.5, 'FIELD_TYPE'],
        [0, 'FIELD_INVALID'],
        [-1, 'FIELD_INVALID'],
        [10_001, 'FIELD_INVALID'],
      ];
      for (const [value, code] of cases) {
        for (const [method, url] of [
          ['POST', '/eventmatch'],
          ['PUT', `/eventmatch/${uuid}`],
        ] as const) {
          const response = await send(method, url, method === 'POST' ? sample({ rate_limit: value }) : { rate_limit: value });
          assert.equal(response.statusCode, 400, `${method} ${JSON.stringify(value)}: ${response.body}`);
          const body = response.json<{ code: string; message: string }>();
          assert.equal(body.code, code, `${method} ${JSON.stringify(value)}: ${body.message}`);
          assert.match(body.message, /^body\.rate_limit: /);
        }
      }
      assert.equal((await send('GET', `/eventmatch/${uuid}`)).json<{ rate_limit: number | null }>().rate_limit, null);
    });
  });
}
