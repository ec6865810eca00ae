/**
 * A subscription keeps the meaning it was written with: a record PUT back as read (the console's
 * edit form always sends `jsonpath`) keeps the stored expression and its dialect, whatever
 * NOTIFICATIONS_JSONPATH_DIALECT would pick for the text today; and enabling without a new
 * expression is refused when the stored one does not compile in its dialect. On every database,
 * through the API, with rows written as the import or an older version writes them.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { appOn, startApiApp } from '../support/app.js';
import { describeOn, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

const USER = { 'http-remote-user': 'alice' };
/** Names of data items over 100 in jsonpath2; in RFC 9535, names of the items' children over 100. */
const AMBIGUOUS = '$.data[*][?(@.size > 100)].name';
const EVENT = {
  specversion: '1.0',
  id: 'sizes-1',
  source: '/e2e/sizes',
  type: 'org.example.sizes',
  data: [{ size: 500, name: 'large', meta: { size: 1000, name: 'inner' } }],
};
/** What jsonpath2 selects in EVENT: the large item's name. */
const JSONPATH2_ANSWER = { matches: true, dialect: 'jsonpath2', values: ['large'], paths: ["$['data'][0]['name']"] };

for (const backend of testBackends()) {
  describeOn(backend, `a subscription keeps its dialect (${backend.name})`, () => {
    const app = appOn(backend, startApiApp);

    const get = async (uuid: string) => (await app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: USER })).json<object>();
    const put = (uuid: string, body: object) => app.inject({ method: 'PUT', url: `/eventmatch/${uuid}`, headers: USER, payload: body });
    const tryOn = async (uuid: string) =>
      (await app.inject({ method: 'POST', url: `/eventmatch/${uuid}/test`, headers: USER, payload: EVENT })).json<object>();
    const stored = (uuid: string) =>
      app.handle.db
        .selectFrom('subscriptions')
        .select(['jsonpath', 'dialect', 'disabled'])
        .where('uuid', '=', uuid)
        .executeTakeFirstOrThrow();

    it('keeps a jsonpath2 expression PUT back as read, though RFC 9535 (tried first today) reads the same text', async () => {
      // As the import from the original service writes it: always jsonpath2.
      const row = subscriptionRow({ jsonpath: AMBIGUOUS, dialect: 'jsonpath2', target_url: 'https://example.org/hook' });
      await insertSubscription(app.handle.db, app.handle.capabilities, row);
      assert.deepEqual(await tryOn(row.uuid), JSONPATH2_ANSWER);

      const read = await get(row.uuid);
      const response = await put(row.uuid, { ...read, name: 'renamed' });
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.json<{ jsonpath: string }>().jsonpath, AMBIGUOUS);
      assert.deepEqual(await stored(row.uuid), { jsonpath: AMBIGUOUS, dialect: 'jsonpath2', disabled: null });
      assert.deepEqual(await tryOn(row.uuid), JSONPATH2_ANSWER);
      // The matcher, told of the write, reads it as jsonpath2 too: RFC 9535 would match nothing here.
      const received = await app.inject({
        method: 'POST',
        url: '/receive',
        headers: { 'content-type': 'application/cloudevents+json' },
        payload: { ...EVENT, data: [{ size: 500, name: 'large' }] },
      });
      assert.deepEqual(received.json<{ matches: number }>().matches, 1);

      // A disabled one enabled with the record as read: kept as well.
      assert.equal((await put(row.uuid, { disabled: true })).statusCode, 200);
      const enabled = await put(row.uuid, { ...(await get(row.uuid)), disabled: null });
      assert.equal(enabled.statusCode, 200, enabled.body);
      assert.deepEqual(await stored(row.uuid), { jsonpath: AMBIGUOUS, dialect: 'jsonpath2', disabled: null });
      assert.deepEqual(await tryOn(row.uuid), JSONPATH2_ANSWER);
    });

    it('refuses to enable, naming body.jsonpath, a subscription whose stored expression does not compile in its dialect', async () => {
      // Written under other limits (an expression is 2,048 characters at most now), disabled.
      const tooLong = `$.data[?(@.name = '${'x'.repeat(3_000)}')]`;
      const row = subscriptionRow({ jsonpath: tooLong, dialect: 'jsonpath2', disabled: 5, error: 'imported: no longer compiles' });
      await insertSubscription(app.handle.db, app.handle.capabilities, row);

      for (const body of [{ disabled: null }, { ...(await get(row.uuid)), disabled: null }]) {
        const response = await put(row.uuid, body);
        assert.equal(response.statusCode, 400, response.body);
        const answer = response.json<{ code: string; message: string; position: number }>();
        assert.equal(answer.code, 'JSONPATH_SYNTAX');
        assert.match(
          answer.message,
          /^body\.jsonpath: the stored expression does not compile in its dialect, jsonpath2 \(invalid JSONPath at position 2048: .*\); send a new jsonpath with "disabled": null to enable the subscription$/,
        );
        assert.equal(answer.position, 2048);
      }
      assert.deepEqual(await stored(row.uuid), { jsonpath: tooLong, dialect: 'jsonpath2', disabled: 5 }, 'still disabled, unchanged');

      const fixed = await put(row.uuid, { disabled: null, jsonpath: '$.data' });
      assert.equal(fixed.statusCode, 200, fixed.body);
      assert.deepEqual(await stored(row.uuid), { jsonpath: '$.data', dialect: 'rfc9535', disabled: null });
    });
  });
}
