/**
 * A PostgreSQL database that does not answer: the server's start and the CLI give up after the
 * connect time-out (NOTIFICATIONS_DATABASE_TIMEOUT, 5 s by default) with one line, and a running
 * server's /readyz answers 503 within about 2 s, and its /metrics says `notifications_database_up 0`. (PostgreSQL only: SQLite is a file in the
 * process, with no connection to wait for.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPostgres, describeOn, POSTGRES, POSTGRES_TEST_URL } from '../support/database.js';
import { startDatabaseProxy, startSilentListener } from '../support/database-proxy.js';
import { eventually } from '../support/http-stub.js';
import { run, runCli, SERVER_BIN, startServer } from '../support/processes.js';

/** One line on stderr naming the time-out, no stack trace. */
function assertOneTimeoutLine(stderr: string): void {
  assert.equal(stderr.trim().split('\n').length, 1, stderr);
  assert.doesNotMatch(stderr, /\n\s+at /);
  assert.match(
    stderr,
    /cannot use the database postgres:\/\/postgres@127\.0\.0\.1:\d+\/silent: no answer from the database within 5 s \(connect time-out\)/,
  );
}

describe('a database that accepts connections and never answers', { concurrency: true }, () => {
  it('the server gives up after the 5 s connect time-out: exit 1, one line', async () => {
    const silent = await startSilentListener();
    try {
      const result = await run(SERVER_BIN, [], { NOTIFICATIONS_DATABASE_URL: silent.url, NOTIFICATIONS_PORT: '0' }, 20_000);
      // From the connection, not from the start: six processes starting at once on a loaded
      // machine can take seconds before they connect.
      const elapsed = Date.now() - silent.firstAcceptedAt()!;
      assert.equal(result.code, 1, `${result.signal === null ? '' : `ended by ${result.signal}; `}${result.stderr}`);
      assertOneTimeoutLine(result.stderr);
      assert.ok(silent.accepted() >= 1, 'the server did connect');
      assert.ok(elapsed >= 4_500 && elapsed < 10_000, `gave up after ${elapsed} ms`);
    } finally {
      await silent.close();
    }
  });

  for (const args of [['dbchk'], ['dbsync'], ['eventget'], ['eventpurge'], ['eventretry', '6f1c1d0e-0d3a-4d7e-9f3e-2a1b0c9d8e7f']]) {
    it(`svc-notifications-cmd ${args[0]} gives up after the 5 s connect time-out: exit 1, one line`, async () => {
      const silent = await startSilentListener();
      try {
        const result = await runCli(['--database-url', silent.url, ...args]);
        const elapsed = Date.now() - silent.firstAcceptedAt()!;
        assert.equal(result.code, 1, result.stderr);
        assertOneTimeoutLine(result.stderr);
        assert.ok(elapsed >= 4_500 && elapsed < 10_000, `gave up after ${elapsed} ms`);
      } finally {
        await silent.close();
      }
    });
  }
});

describeOn(POSTGRES, 'a running server whose PostgreSQL stops answering', () => {
  it('answers /readyz with 503 within about 2 s, and says the database is down on /metrics until it answers again', async () => {
    const database = await createPostgres(POSTGRES_TEST_URL!);
    const proxy = await startDatabaseProxy(database.url);
    try {
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      // A database time-out far past the readiness bound: without the bound, /readyz would take 30 s.
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: proxy.url, NOTIFICATIONS_DATABASE_TIMEOUT: '30s' });
      try {
        assert.equal((await fetch(`${server.url}/readyz`)).status, 200, 'ready while the database answers');
        proxy.hold();
        const started = Date.now();
        const ready = await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(60_000) });
        const elapsed = Date.now() - started;
        assert.equal(ready.status, 503);
        assert.deepEqual(await ready.json(), { status: 'not ready', policy: 'allow-all', database: 'unreachable' });
        // Once the 2 s readiness bound has passed, not sooner (the check did wait for the database), and
        // long before the database's own 30 s time-out: ample room for a loaded machine.
        assert.ok(elapsed >= 1_900, `answered after ${elapsed} ms`);
        assert.ok(elapsed < 20_000, `answered after ${elapsed} ms`);
        assert.equal((await fetch(`${server.url}/healthz`)).status, 200, 'the process itself still answers');
        const scraped = await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(60_000) });
        assert.equal(scraped.status, 200, 'the scrape is served without the database');
        const metrics = await scraped.text();
        assert.match(metrics, /^notifications_database_up 0$/m);
        assert.doesNotMatch(metrics, /^notifications_queue_depth\{/m, 'no queue gauges: they could not be read');
        proxy.release();
        await eventually(
          async () => /^notifications_database_up 1$/m.test(await (await fetch(`${server.url}/metrics`)).text()),
          'up again once the database answers',
        );
      } finally {
        // Its queries hang on the frozen connections: a graceful stop would only wait them out.
        await server.stop('SIGKILL');
      }
    } finally {
      await proxy.close();
      await database.cleanup();
    }
  });
});
