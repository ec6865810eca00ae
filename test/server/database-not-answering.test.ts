/**
 * A PostgreSQL database that does not answer: the server's start and the CLI give up after the
 * 10 s connect time-out with one line. (PostgreSQL only: SQLite is a file in the process, with no connection to wait for.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { run, runCli, SERVER_BIN } from '../support/processes.js';
import { startSilentListener } from './silent-database.js';

/** One line on stderr naming the time-out, no stack trace. */
function assertOneTimeoutLine(stderr: string): void {
  assert.equal(stderr.trim().split('\n').length, 1, stderr);
  assert.doesNotMatch(stderr, /\n\s+at /);
  assert.match(stderr, /cannot use the database postgres:\/\/postgres@127\.0\.0\.1:\d+\/silent: no answer from the database within 10 s \(connect time-out\)/);
}

describe('a database that accepts connections and never answers', { concurrency: true }, () => {
  it('the server gives up after the 10 s connect time-out: exit 1, one line', async () => {
    const silent = await startSilentListener();
    try {
      const started = Date.now();
      const result = await run(SERVER_BIN, [], { NOTIFICATIONS_DATABASE_URL: silent.url, NOTIFICATIONS_PORT: '0' }, 20_000);
      const elapsed = Date.now() - started;
      assert.equal(result.code, 1, result.stderr);
      assertOneTimeoutLine(result.stderr);
      assert.ok(silent.accepted() >= 1, 'the server did connect');
      assert.ok(elapsed >= 9_500 && elapsed < 15_000, `gave up after ${elapsed} ms`);
    } finally {
      await silent.close();
    }
  });

  for (const args of [['dbchk'], ['dbsync'], ['eventget'], ['eventpurge'], ['eventretry', '6f1c1d0e-0d3a-4d7e-9f3e-2a1b0c9d8e7f']]) {
    it(`svc-notifications-cmd ${args[0]} gives up after the 10 s connect time-out: exit 1, one line`, async () => {
      const silent = await startSilentListener();
      try {
        const started = Date.now();
        const result = await runCli(['--database-url', silent.url, ...args]);
        const elapsed = Date.now() - started;
        assert.equal(result.code, 1, result.stderr);
        assertOneTimeoutLine(result.stderr);
        assert.ok(elapsed >= 9_500 && elapsed < 15_000, `gave up after ${elapsed} ms`);
      } finally {
        await silent.close();
      }
    });
  }
});
