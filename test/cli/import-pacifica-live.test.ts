/**
 * `import-pacifica` while the service runs, as a cut-over does it: the imported subscriptions
 * start matching new events without a restart (SQLite: the server follows another process's
 * commits; PostgreSQL: the import's inserts notify every instance), and the imported log is
 * history: none of its events is delivered.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, type HttpStub, reply, startStub } from '../support/http-stub.js';
import { createSqliteOriginal, type OriginalDatabaseFixture } from '../support/original-service.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';

const PIPELINE = '7c1e0000-0000-4000-8000-000000000001';
const OLD_EVENT = '7c1e0000-0000-4000-8000-0000000000e1';

for (const backend of testBackends()) {
  describeOn(backend, `import-pacifica into a running service (${backend.name})`, () => {
    let database: TestDatabase;
    let original: OriginalDatabaseFixture;
    let server: RunningServer;
    let target: HttpStub;

    before(async () => {
      database = await backend.create();
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      target = await startStub(reply(204));
      original = await createSqliteOriginal();
      // The original's pipeline, on `$.data` as its users write them, and an event it already routed.
      await original.addSubscriptions([
        {
          uuid: PIPELINE,
          name: 'pipeline',
          jsonpath: '$.data',
          user: 'alice',
          target_url: `${target.url}/pipeline`,
          created: '2019-03-01 10:00:00',
          updated: '2019-03-01 10:00:00',
        },
      ]);
      await original.addEvents([
        {
          uuid: OLD_EVENT,
          jsondata: '{"specversion": "1.0", "id": "old", "source": "/facility", "type": "t", "data": {"a": 1}}',
          created: '2019-03-02 10:00:00',
        },
      ]);
      await original.addMatches([
        {
          uuid: '7c1e0000-0000-4000-8000-0000000000a1',
          event: OLD_EVENT,
          subscription: PIPELINE,
          policy: '200',
          target: '200',
          created: '2019-03-02 10:00:01',
        },
      ]);
      server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url });
    });
    after(async () => {
      if (server) assert.equal(await server.stop(), 0, server.logs());
      await target?.close();
      await original?.cleanup();
      await database?.cleanup();
    });

    it('imported subscriptions match new events without a restart; the imported log is not delivered again', async () => {
      const imported = await runCli(['--database-url', database.url, 'import-pacifica', '--from', original.url]);
      assert.equal(imported.code, 0, imported.stdout + imported.stderr);
      assert.match(imported.stdout, /^subscriptions: 1 new/m);
      assert.match(imported.stdout, /^events: 1 new/m);
      const receive = async () => {
        const response = await fetch(`${server.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json' },
          body: JSON.stringify({ specversion: '1.0', id: randomUUID(), source: '/facility', type: 't', data: { a: 2 } }),
        });
        assert.equal(response.status, 200);
        return ((await response.json()) as { matches: number }).matches;
      };
      await eventually(async () => (await receive()) === 1, 'an imported subscription matching a new event', 20_000);
      await eventually(() => target.requests.length > 0, 'the new event delivered to the imported target');
      assert.ok(
        target.requests.every((request) => (JSON.parse(request.body) as { id: string }).id !== 'old'),
        'the imported event is history, never sent again',
      );
    });
  });
}
