import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildApp } from '../../src/api/app.js';
import { type HealthDependencies, healthRoutes } from '../../src/api/health.js';
import { openDatabase } from '../../src/db/connect.js';
import { syncSchema } from '../../src/db/migrate.js';
import { describeOn, testBackends } from '../support/database.js';
import { startSilentListener } from '../support/database-proxy.js';
import { eventually } from '../support/http-stub.js';

for (const backend of testBackends()) {
  describeOn(backend, `/readyz (${backend.name})`, () => {
    async function readyz(
      policyMode: HealthDependencies['policyMode'],
      prepare: (database: HealthDependencies['database']) => Promise<void>,
    ) {
      const created = await backend.create();
      const database = openDatabase(created.url);
      try {
        await prepare(database);
        const app = await buildApp({ maxBodyBytes: 1024, logger: 'silent', version: 'test' }, [healthRoutes({ database, policyMode })]);
        const response = await app.inject({ method: 'GET', url: '/readyz' });
        await app.close();
        return { status: response.statusCode, body: response.json() as Record<string, string> };
      } finally {
        await database.close().catch(() => undefined);
        await created.cleanup();
      }
    }

    it('is ready with a current schema, and names the policy mode', async () => {
      const { status, body } = await readyz('policy-service', async (database) => void (await syncSchema(database)));
      assert.equal(status, 200);
      assert.deepEqual(body, { status: 'ready', policy: 'policy-service', database: 'ok', schema: 'current' });
    });

    it('is not ready while the schema is out of date, and says what to run', async () => {
      const { status, body } = await readyz('allow-all', async () => undefined);
      assert.equal(status, 503);
      assert.equal(body.status, 'not ready');
      assert.match(body.schema ?? '', /out of date: run svc-notifications-cmd dbsync/);
    });
  });
}

describe('/readyz without a database', () => {
  it('is not ready when the database cannot be reached', async () => {
    const database = openDatabase('postgres://postgres@127.0.0.1:1/nowhere');
    const app = await buildApp({ maxBodyBytes: 1024, logger: 'silent', version: 'test' }, [
      healthRoutes({ database, policyMode: 'allow-all' }),
    ]);
    try {
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(response.statusCode, 503);
      assert.deepEqual(response.json(), { status: 'not ready', policy: 'allow-all', database: 'unreachable' });
    } finally {
      await app.close();
      await database.close();
    }
  });
});

describe('/readyz when the database does not answer', () => {
  it('answers 503 after about 2 s, not after the connect time-out', async () => {
    const silent = await startSilentListener();
    // A connect time-out far past the readiness bound: without the bound, /readyz would take 30 s.
    const database = openDatabase(silent.url, { timeoutMs: 30_000 });
    const app = await buildApp({ maxBodyBytes: 1024, logger: 'silent', version: 'test' }, [
      healthRoutes({ database, policyMode: 'allow-all' }),
    ]);
    try {
      const started = Date.now();
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      const elapsed = Date.now() - started;
      assert.equal(response.statusCode, 503);
      assert.deepEqual(response.json(), { status: 'not ready', policy: 'allow-all', database: 'unreachable' });
      // Once the 2 s readiness bound has passed, not sooner (the check did wait for the database), and
      // long before the database's own 30 s time-out: ample room for a loaded machine.
      assert.ok(elapsed >= 1_900, `answered after ${elapsed} ms`);
      assert.ok(elapsed < 20_000, `answered after ${elapsed} ms`);
      // The listener counts the connection when its event loop (this one) gets to it, which a
      // loaded machine may put off until after the answer.
      await eventually(() => silent.accepted() >= 1, 'the check reached the silent database');
    } finally {
      await app.close();
      // Closing the listener first fails the pending connection at once, so the pool can end.
      await silent.close();
      await database.close();
    }
  });
});
