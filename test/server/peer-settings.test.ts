/**
 * NOTIFICATIONS_TRUSTED_PROXIES and NOTIFICATIONS_RECEIVE_ALLOW as the started server reads them:
 * their behaviour is tested in-process with the lists passed in (test/api/trusted-proxies.test.ts,
 * receive-allow.test.ts); here, that the variables reach it. The tests' peer is 127.0.0.1. One
 * server at a time on the database, each stopped once asked.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const EVENT = JSON.stringify({ specversion: '1.0', id: 'peer-settings', source: '/peer-settings', type: 'org.example.test' });

for (const backend of testBackends()) {
  describeOn(backend, `trusted proxies and the /receive allow-list in the started server (${backend.name})`, () => {
    let database: TestDatabase;
    /** What a server started with `env` answers `ask`; the server is stopped after. */
    const answer = async (env: Record<string, string>, ask: (server: RunningServer) => Promise<Response>) => {
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, ...env });
      try {
        const response = await ask(server);
        return { status: response.status, code: ((await response.json()) as { code?: string }).code };
      } finally {
        await server.stop();
      }
    };
    const receive = (server: RunningServer) =>
      fetch(`${server.url}/receive`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: EVENT });
    const list = (server: RunningServer) => fetch(`${server.url}/eventmatch`, { headers: { 'http-remote-user': 'alice' } });

    before(async () => {
      database = await syncedDatabase(backend);
    });
    after(() => database.cleanup());

    it('believes the identity header from loopback by default, and not when NOTIFICATIONS_TRUSTED_PROXIES leaves it out', async () => {
      assert.equal((await answer({}, list)).status, 200);
      assert.deepEqual(await answer({ NOTIFICATIONS_TRUSTED_PROXIES: '10.0.0.0/8' }, list), { status: 401, code: 'IDENTITY_UNTRUSTED' });
    });

    it('takes events from any peer by default, and refuses one NOTIFICATIONS_RECEIVE_ALLOW leaves out', async () => {
      assert.equal((await answer({}, receive)).status, 200);
      assert.deepEqual(await answer({ NOTIFICATIONS_RECEIVE_ALLOW: '10.0.0.0/8' }, receive), { status: 403, code: 'RECEIVE_FORBIDDEN' });
      assert.equal((await answer({ NOTIFICATIONS_RECEIVE_ALLOW: '10.0.0.0/8,127.0.0.1/32' }, receive)).status, 200);
    });
  });
}
