import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeSettings } from '../../src/config/settings.js';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, reply, startStub } from '../support/http-stub.js';
import { type RunningServer, run, runCli, SERVER_BIN, startServer } from '../support/processes.js';

describe('svc-notifications start-up', () => {
  it('--help lists every setting and every flag; --version prints the version', async () => {
    const help = await run(SERVER_BIN, ['--help']);
    assert.equal(help.code, 0);
    const [usageLine] = help.stdout.split('\n');
    for (const setting of describeSettings()) {
      assert.match(help.stdout, new RegExp(`^  ${setting.name} `, 'm'));
      if (setting.flag !== undefined) {
        assert.ok(usageLine!.includes(`[${setting.flag} `), `${setting.flag} in ${usageLine}`);
        assert.match(help.stdout, new RegExp(`^  ${setting.name} +${setting.flag} `, 'm'));
      }
    }
    assert.ok(usageLine!.includes('[--default-user DEFAULT_USER]'), usageLine);
    const version = await run(SERVER_BIN, ['--version']);
    assert.equal(version.code, 0);
    assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
  });

  it('an unreachable database: one line, no stack trace, exit 1', async () => {
    const result = await run(SERVER_BIN, [], { NOTIFICATIONS_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' });
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, /cannot use the database/);
  });

  it('invalid configuration: one clear line and exit 1', async () => {
    const result = await run(SERVER_BIN, [], { NOTIFICATIONS_PORT: 'eighty' });
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, /NOTIFICATIONS_PORT/);
  });
});

for (const backend of testBackends()) {
  describeOn(backend, `svc-notifications as a process (${backend.name})`, () => {
    let database: TestDatabase;
    before(async () => {
      database = await backend.create();
    });
    after(() => database.cleanup());

    it('refuses a database whose schema is out of date, and names dbsync', async () => {
      const result = await run(SERVER_BIN, [], { NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_PORT: '0' });
      assert.equal(result.code, 1);
      assert.match(result.stderr, /out of date.*svc-notifications-cmd dbsync/);
    });

    it('serves health and readiness, says it is in allow-all mode, and stops cleanly on SIGTERM', async () => {
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url });
      let notFoundId: string | null = null;
      try {
        assert.deepEqual(await (await fetch(`${server.url}/healthz`)).json(), { status: 'ok' });
        const ready = await fetch(`${server.url}/readyz`);
        assert.equal(ready.status, 200);
        assert.deepEqual(await ready.json(), { status: 'ready', policy: 'allow-all', database: 'ok', schema: 'current' });
        assert.ok(ready.headers.get('x-request-id'), 'answers carry their request id');
        assert.match(server.logs(), /"level":40.*allow-all mode/);
        // Logged, as a request answered 4xx is by default (one answered 200 is not).
        const unknown = await fetch(`${server.url}/nowhere`);
        await unknown.arrayBuffer();
        notFoundId = unknown.headers.get('x-request-id');
      } finally {
        assert.equal(await server.stop('SIGTERM'), 0);
      }
      const lines = server
        .logs()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { reqId?: string; msg: string });
      assert.deepEqual(
        lines.filter((line) => line.reqId !== undefined).map((line) => [line.reqId, line.msg]),
        [[notFoundId, 'request answered']],
        'one line for the request answered 404, with its request id',
      );
    });

    it('logs no secret, even at trace level: receive token, secret key, target credentials', async () => {
      const secretKey = Buffer.alloc(32, 7).toString('base64');
      const target = await startStub(reply(500));
      const server = await startServer({
        NOTIFICATIONS_DATABASE_URL: database.url,
        NOTIFICATIONS_LOG_LEVEL: 'trace',
        NOTIFICATIONS_RECEIVE_TOKEN: 'receive-token-5ecret',
        NOTIFICATIONS_SECRET_KEY: secretKey,
        NOTIFICATIONS_RETRY_DELAYS: '100ms,100ms',
      });
      try {
        const created = await fetch(`${server.url}/eventmatch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'http-remote-user': 'secretive' },
          body: JSON.stringify({
            name: 'n',
            jsonpath: "$[?$.source == '/secrets']",
            target_url: target.url,
            auth: { type: 'basic', basic: { username: 'pipe', password: 'target-pa55word' } },
          }),
        });
        assert.equal(created.status, 200);
        const received = await fetch(`${server.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json', authorization: 'Bearer receive-token-5ecret' },
          body: JSON.stringify({ specversion: '1.0', id: 's-1', source: '/secrets', type: 't' }),
        });
        assert.equal(received.status, 200);
        await eventually(() => target.requests.length >= 1, 'a first, failing delivery');
        target.answer(reply(204));
        await eventually(() => target.requests.length >= 2, 'the retry');
      } finally {
        assert.equal(await server.stop(), 0);
        await target.close();
      }
      const logs = server.logs();
      assert.ok(logs.length > 1_000, 'trace logging wrote something');
      const basic = Buffer.from('pipe:target-pa55word').toString('base64');
      for (const secret of ['receive-token-5ecret', secretKey, 'target-pa55word', basic])
        assert.ok(!logs.includes(secret), `logged: ${secret}`);
    });

    it('a subscription written through one process is read by another on the same database', async () => {
      const env = { NOTIFICATIONS_DATABASE_URL: database.url };
      const servers: RunningServer[] = [await startServer(env), await startServer(env)];
      try {
        const [writer, reader] = servers as [RunningServer, RunningServer];
        const headers = { 'content-type': 'application/json', 'http-remote-user': 'alice' };
        const created = await fetch(`${writer.url}/eventmatch`, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            name: 'text files',
            jsonpath: "$.data[?@.mimetype == 'text/plain']",
            target_url: 'http://127.0.0.1:9/hook',
            auth: { type: 'basic', basic: { username: 'pipeline', password: 's3cret-pa55' } },
          }),
        });
        assert.equal(created.status, 200);
        const record = (await created.json()) as { uuid: string };
        const read = await fetch(`${reader.url}/eventmatch/${record.uuid}`, { headers });
        assert.equal(read.status, 200);
        assert.deepEqual(await read.json(), record);
        const listed = (await (await fetch(`${reader.url}/eventmatch`, { headers })).json()) as Array<{ uuid: string }>;
        assert.deepEqual(
          listed.map((s) => s.uuid),
          [record.uuid],
        );
        for (const server of servers) assert.doesNotMatch(server.logs(), /s3cret-pa55/, 'no secret in the logs');
      } finally {
        for (const server of servers) assert.equal(await server.stop(), 0);
      }
    });
  });
}
