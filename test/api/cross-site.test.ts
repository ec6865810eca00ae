import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { startEventmatchApp } from '../support/app.js';

const USER = { 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `requests a browser sends for another site's page (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    let uuid = '';
    before(async () => {
      test = await openTestDatabase(backend);
      app = await startEventmatchApp(test.handle);
      const created = await app.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: USER,
        payload: { name: 'n', jsonpath: '$.a', target_url: 'http://127.0.0.1:9/hook' },
      });
      uuid = created.json<{ uuid: string }>().uuid;
    });
    after(async () => {
      await app?.close();
      await test?.close();
    });

    const secret = async () =>
      (await app.inject({ method: 'GET', url: `/eventmatch/${uuid}/secret`, headers: USER })).json<{ secret: string }>().secret;
    const rotate = (site?: string) =>
      app.inject({
        method: 'POST',
        url: `/eventmatch/${uuid}/secret/rotate`,
        headers: { ...USER, ...(site === undefined ? {} : { 'sec-fetch-site': site }) },
      });

    it('refuses a change sent for a page of another site or another origin of this site, and changes nothing', async () => {
      const before = await secret();
      for (const site of ['cross-site', 'same-site']) {
        const refused = await rotate(site);
        assert.equal(refused.statusCode, 403, site);
        const body = refused.json<{ code: string; message: string }>();
        assert.equal(body.code, 'CROSS_SITE_REQUEST');
        assert.match(body.message, new RegExp(`^sec-fetch-site: "${site}": `));
      }
      const deleted = await app.inject({
        method: 'DELETE',
        url: `/eventmatch/${uuid}`,
        headers: { ...USER, 'sec-fetch-site': 'cross-site' },
      });
      assert.equal(deleted.statusCode, 403);
      assert.equal(await secret(), before);
      assert.equal((await app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: USER })).statusCode, 200);
    });

    it("takes a change from this origin's own pages (the console), from the user, and from clients that are not browsers", async () => {
      for (const site of ['same-origin', 'none', undefined]) {
        const before = await secret();
        const rotated = await rotate(site);
        assert.equal(rotated.statusCode, 200, String(site));
        assert.notEqual(await secret(), before, String(site));
      }
    });

    it('answers reads whatever page asked: without CORS, another site cannot read the answer', async () => {
      const listed = await app.inject({ method: 'GET', url: '/eventmatch', headers: { ...USER, 'sec-fetch-site': 'cross-site' } });
      assert.equal(listed.statusCode, 200);
      assert.equal(listed.headers['access-control-allow-origin'], undefined);
    });
  });
}
