import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { DatabaseHandle } from '../../src/db/connect.js';
import type { SubscriptionChange } from '../../src/subscriptions/service.js';
import { startEventmatchApp } from '../support/app.js';
import { openTestDatabase, testBackends } from '../support/database.js';

const startApp = (database: DatabaseHandle, secretKey: Buffer | null) => startEventmatchApp(database, { secretKey });

const USER = { 'http-remote-user': 'alice' };
const PASSWORD = 'correct-horse-battery-staple';
const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.dG9rZW4';
const basic = { type: 'basic', basic: { username: 'pipeline', password: PASSWORD } };
const header = { type: 'header', header: { type: 'Bearer', credentials: TOKEN } };
const body = (auth: object) => ({ name: 'n', jsonpath: '$.data', target_url: 'https://example.org/hook', auth });

for (const backend of testBackends()) {
  describe(`/eventmatch credentials at rest (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    before(async () => {
      test = await openTestDatabase(backend);
    });
    after(async () => test.close());

    const rawAuth = async (uuid: string) =>
      (await test.handle.db.selectFrom('subscriptions').select('auth').where('uuid', '=', uuid).executeTakeFirstOrThrow()).auth;

    it('stores auth encrypted with a key, readable after a restart with the same key only', async () => {
      const key = randomBytes(32);
      const first = await startApp(test.handle, key);
      const created = await first.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: body(basic) });
      assert.equal(created.statusCode, 200);
      const { uuid, auth } = created.json<{ uuid: string; auth: unknown }>();
      assert.deepEqual(auth, basic, 'echoed as supplied');
      const updated = await first.inject({ method: 'PUT', url: `/eventmatch/${uuid}`, headers: USER, payload: { auth: header } });
      assert.deepEqual(updated.json<{ auth: unknown }>().auth, header);
      await first.close();

      const stored = await rawAuth(uuid);
      assert.match(stored, /^v1:[A-Za-z0-9+/]+=*$/);
      assert.ok(!stored.includes(TOKEN) && !stored.includes('Bearer') && !stored.includes(PASSWORD));
      assert.ok(Buffer.from(stored.slice(3), 'base64').length >= 12 + 16 + JSON.stringify(header).length);

      const restarted = await startApp(test.handle, Buffer.from(key));
      try {
        const read = await restarted.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: USER });
        assert.equal(read.statusCode, 200);
        assert.deepEqual(read.json<{ auth: unknown }>().auth, header);
      } finally {
        await restarted.close();
      }

      for (const [label, other] of [['a different key', randomBytes(32)], ['no key', null]] as const) {
        const wrong = await startApp(test.handle, other);
        try {
          for (const url of [`/eventmatch/${uuid}`, '/eventmatch']) {
            const response = await wrong.inject({ method: 'GET', url, headers: USER });
            assert.equal(response.statusCode, 500, `${label} ${url}`);
            assert.deepEqual(response.json(), {
              statusCode: 500,
              error: 'Internal Server Error',
              message: 'stored target credentials are encrypted; start the service with the NOTIFICATIONS_SECRET_KEY they were written with',
            });
            assert.ok(!response.body.includes(TOKEN));
          }
          const fresh = await wrong.inject({ method: 'POST', url: '/eventmatch', headers: { 'http-remote-user': 'bob' }, payload: body(basic) });
          assert.equal(fresh.statusCode, 200, `${label}: the service keeps working for other subscriptions`);
        } finally {
          await wrong.close();
        }
      }
    });

    it('stores auth as given without a key, and still reads it once a key is configured', async () => {
      const plain = await startApp(test.handle, null);
      const { uuid } = (await plain.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: body(basic) })).json<{ uuid: string }>();
      await plain.close();
      assert.deepEqual(JSON.parse(await rawAuth(uuid)), basic);

      const keyed = await startApp(test.handle, randomBytes(32));
      try {
        const read = await keyed.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: USER });
        assert.equal(read.statusCode, 200);
        assert.deepEqual(read.json<{ auth: unknown }>().auth, basic);
        await keyed.inject({ method: 'PUT', url: `/eventmatch/${uuid}`, headers: USER, payload: { name: 'renamed' } });
        assert.ok(!(await rawAuth(uuid)).startsWith('v1:'), 'auth not sent: left as it was');
        await keyed.inject({ method: 'PUT', url: `/eventmatch/${uuid}`, headers: USER, payload: { auth: basic } });
        assert.ok((await rawAuth(uuid)).startsWith('v1:'), 'auth written again: sealed');
      } finally {
        await keyed.close();
      }
    });

    it('changes nothing and answers 500 to PUT and DELETE when the stored credentials do not open, as GET does', async () => {
      const written = await startApp(test.handle, randomBytes(32));
      const { uuid } = (await written.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: body(basic) })).json<{ uuid: string }>();
      await written.close();
      // A pending delivery, which a DELETE or a disabling PUT would cancel.
      const event = { uuid: randomUUID(), source: '/s', event_id: randomUUID(), type: 't', spec_version: '1.0', body: '{}', received: 1 };
      await test.handle.db.insertInto('events').values(event).execute();
      const match = {
        uuid: randomUUID(), event_uuid: event.uuid, subscription_uuid: uuid, owner: 'alice', state: 'deliver' as const,
        policy_code: 200, target_code: null, created: 1, due: 1, locked_until: null, locked_by: null, attempts: 0, updated: 1,
      };
      await test.handle.db.insertInto('matches').values(match).execute();
      // Plain text that is not JSON: written by hand, or by a bug.
      const damaged = (await startApp(test.handle, null).then(async (plain) => {
        const created = await plain.inject({ method: 'POST', url: '/eventmatch', headers: USER, payload: body(basic) });
        await plain.close();
        return created.json<{ uuid: string }>().uuid;
      }));
      await test.handle.db.updateTable('subscriptions').set({ auth: `{"type": "basic", "basic": {"username": "u", "password": "${PASSWORD}"` }).where('uuid', '=', damaged).execute();

      const rowOf = (id: string) => test.handle.db.selectFrom('subscriptions').selectAll().where('uuid', '=', id).executeTakeFirstOrThrow();
      const matchRow = () => test.handle.db.selectFrom('matches').selectAll().where('uuid', '=', match.uuid).executeTakeFirstOrThrow();
      const WRONG_KEY = 'stored target credentials are encrypted; start the service with the NOTIFICATIONS_SECRET_KEY they were written with';
      const DAMAGED = 'stored target credentials are damaged (not JSON)';
      const requests = [
        ['GET', undefined],
        ['PUT', { name: 'renamed' }],
        ['PUT', { disabled: true }],
        ['PUT', { disabled: null }],
        ['PUT', { auth: {} }],
        ['DELETE', undefined],
      ] as const;
      for (const [label, key, id, message] of [
        ['sealed, a different key', randomBytes(32), uuid, WRONG_KEY],
        ['sealed, no key', null, uuid, WRONG_KEY],
        ['damaged', null, damaged, DAMAGED],
      ] as const) {
        const changes: SubscriptionChange[] = [];
        const app = await startEventmatchApp(test.handle, { secretKey: key, onChange: (change) => changes.push(change) });
        try {
          const [row, pending] = [await rowOf(id), await matchRow()];
          for (const [method, payload] of requests) {
            // PUT {"auth": {}} replaces the credentials, which is how an owner gets out (below).
            if (payload !== undefined && 'auth' in payload) continue;
            const response = await app.inject({ method, url: `/eventmatch/${id}`, headers: USER, ...(payload === undefined ? {} : { payload }) });
            assert.equal(response.statusCode, 500, `${label}: ${method} ${JSON.stringify(payload)}: ${response.body}`);
            assert.deepEqual(response.json(), { statusCode: 500, error: 'Internal Server Error', message });
            assert.ok(!response.body.includes(PASSWORD));
          }
          assert.deepEqual(await rowOf(id), row, `${label}: the subscription is as it was`);
          assert.deepEqual(await matchRow(), pending, `${label}: its pending delivery is not cancelled`);
          assert.deepEqual(changes, [], `${label}: the matcher is told of no change`);
        } finally {
          await app.close();
        }
      }

      // Sending auth again replaces what cannot be opened; then everything works.
      const recovered = await startApp(test.handle, randomBytes(32));
      try {
        for (const id of [uuid, damaged]) {
          const put = await recovered.inject({ method: 'PUT', url: `/eventmatch/${id}`, headers: USER, payload: { auth: header, disabled: null } });
          assert.equal(put.statusCode, 200, put.body);
          assert.deepEqual(put.json<{ auth: unknown }>().auth, header);
          assert.equal((await recovered.inject({ method: 'DELETE', url: `/eventmatch/${id}`, headers: USER })).statusCode, 200);
        }
        assert.equal((await matchRow()).state, 'cancelled', 'the delete went through, and cancelled the delivery');
      } finally {
        await recovered.close();
      }
    });

    it('never writes a password or token to the JSON logs', async () => {
      const { stdout, stderr, code } = await runLoggedRequests(test.database.url);
      assert.equal(code, 0, stderr);
      const report = JSON.parse(stderr.trim().split('\n').at(-1) ?? '{}') as { echoed: boolean };
      assert.equal(report.echoed, true, 'the requests really carried the credentials');
      const lines = stdout.trim().split('\n');
      assert.ok(lines.length >= 20, `expected request logs, got ${lines.length} lines`);
      for (const line of lines) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        assert.equal(typeof entry['reqId'] === 'string' || typeof entry['msg'] === 'string', true);
      }
      assert.ok(stdout.includes('"reqId"'), 'request lines carry the request id');
      for (const secret of [PASSWORD, TOKEN, Buffer.from(`pipeline:${PASSWORD}`).toString('base64')]) {
        assert.ok(!stdout.includes(secret), `the logs contain ${secret}`);
        assert.ok(!stderr.includes(secret));
      }
    });
  });
}

/**
 * The logger of buildApp writes to the process's standard output, so the requests run in a
 * child process (at level trace: every line the app can write) whose output is read here.
 */
function runLoggedRequests(databaseUrl: string): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const module = (path: string) => JSON.stringify(new URL(path, import.meta.url).href);
  const script = `
    import { buildApp } from ${module('../../src/api/app.js')};
    import { eventmatchRoutes } from ${module('../../src/api/eventmatch-routes.js')};
    import { openDatabase } from ${module('../../src/db/connect.js')};
    import { systemClock } from ${module('../../src/time/clock.js')};
    const database = openDatabase(${JSON.stringify(databaseUrl)});
    const H = { 'http-remote-user': 'logger' };
    const basic = ${JSON.stringify(basic)};
    const header = ${JSON.stringify(header)};
    const payload = (auth) => ({ name: 'n', jsonpath: '$.data', target_url: 'https://example.org/hook', auth });
    let echoed = true;
    for (const secretKey of [null, Buffer.alloc(32, 7), Buffer.alloc(32, 9)]) {
      const app = await buildApp({ maxBodyBytes: 1024, logLevel: 'trace', version: 'test' }, [
        eventmatchRoutes({ database, clock: systemClock(), secretKey, dialectMode: 'auto', identity: { header: 'http-remote-user', defaultUser: null } }),
      ]);
      const created = await app.inject({ method: 'POST', url: '/eventmatch', headers: H, payload: payload(basic) });
      echoed &&= created.body.includes(${JSON.stringify(PASSWORD)});
      const uuid = created.json().uuid;
      await app.inject({ method: 'GET', url: '/eventmatch/' + uuid, headers: H });
      await app.inject({ method: 'GET', url: '/eventmatch', headers: H });
      const put = await app.inject({ method: 'PUT', url: '/eventmatch/' + uuid, headers: H, payload: { auth: header } });
      echoed &&= put.body.includes(${JSON.stringify(TOKEN)});
      await app.inject({ method: 'PUT', url: '/eventmatch/' + uuid, headers: H, payload: { auth: { ...basic, basic: { ...basic.basic, username: 'a:b' } } } });
      await app.inject({ method: 'PUT', url: '/eventmatch/' + uuid, headers: H, payload: { auth: { type: 'basic', basic: { username: 'u', password: 5 } }, note: ${JSON.stringify(PASSWORD)} } });
      await app.inject({ method: 'POST', url: '/eventmatch', headers: { ...H, 'content-type': 'application/json' }, payload: '{"auth": {"type": "basic", "basic": {"password": "${PASSWORD}"' });
      await app.inject({ method: 'POST', url: '/eventmatch', headers: { ...H, 'content-type': 'text/plain' }, payload: ${JSON.stringify(PASSWORD)} });
      await app.inject({ method: 'POST', url: '/eventmatch', headers: H, payload: { ...payload(basic), name: 'x'.repeat(2000) } });
      await app.inject({ method: 'POST', url: '/eventmatch/test', headers: H, payload: { jsonpath: '$.auth', event: { auth: basic } } });
      await app.inject({ method: 'POST', url: '/eventmatch/' + uuid + '/test', headers: H, payload: { auth: header } });
      await app.inject({ method: 'GET', url: '/eventmatch', headers: { ...H, authorization: 'Bearer ' + ${JSON.stringify(TOKEN)} } });
      await app.inject({ method: 'DELETE', url: '/eventmatch/' + uuid, headers: H });
      await app.inject({ method: 'POST', url: '/eventmatch', headers: H, payload: payload(basic) });
      await app.close();
    }
    // Read with a key the rows were not written with: the 500 path.
    const wrong = await buildApp({ maxBodyBytes: 1024, logLevel: 'trace', version: 'test' }, [
      eventmatchRoutes({ database, clock: systemClock(), secretKey: Buffer.alloc(32, 1), dialectMode: 'auto', identity: { header: 'http-remote-user', defaultUser: null } }),
    ]);
    await wrong.inject({ method: 'POST', url: '/eventmatch', headers: H, payload: payload(basic) });
    echoed &&= (await wrong.inject({ method: 'GET', url: '/eventmatch', headers: H })).statusCode === 500;
    await wrong.close();
    await database.close();
    console.error(JSON.stringify({ echoed }));
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ stdout, stderr, code }));
  });
}
