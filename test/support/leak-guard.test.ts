/**
 * The leak guard (leak-guard.ts) fails a file that leaves a server or a timer running, naming
 * it and where it was made, and lets pass one that closes what it opened, in its own `after`
 * hook too. Each fixture runs in its own `node --test` with the guard preloaded, as
 * scripts/run-tests.mjs runs every test file.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';

const GUARD = new URL('./leak-guard.js', import.meta.url).href;

function runWithGuard(fixture: string, extraEnv: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const file = new URL(`./leak-fixtures/${fixture}.js`, import.meta.url).pathname;
  const env = { ...process.env, ...extraEnv };
  delete env.NODE_TEST_CONTEXT; // a run of its own, not a part of this file's
  const child = spawn(process.execPath, ['--test', '--test-reporter=tap', '--import', GUARD, file], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // Without the guard, the leaking fixtures would never end: kill them rather than wait.
  const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(kill);
      resolve({ code, output });
    }),
  );
}

describe('leak guard', { timeout: 60_000 }, () => {
  it('fails a file that leaves a server listening, and says what and where', async () => {
    const { code, output } = await runWithGuard('leaked-server');
    assert.equal(code, 1, output);
    assert.match(output, /left running after the tests: 1 TCPServerWrap/);
    assert.match(output, /TCPSERVERWRAP \(127\.0\.0\.1:\d+\) created at .*leaked-server\.js/);
  });

  it('fails a file that leaves a timer running', async () => {
    const { code, output } = await runWithGuard('leaked-timer');
    assert.equal(code, 1, output);
    assert.match(output, /left running after the tests: 1 Timeout/);
    assert.match(output, /Timeout created at .*leaked-timer\.js/);
  });

  it('fails a file whose process outlives its tests for what the check cannot see (a worker thread)', async () => {
    const { code, output } = await runWithGuard('leaked-worker', { LEAK_GUARD_WATCHDOG_MS: '1000' });
    assert.equal(code, 1, output);
    assert.match(output, /the process is still running 1000 ms after its tests ended/);
  });

  it('passes a file that closes what it opened in its own after hook', async () => {
    const { code, output } = await runWithGuard('closed-in-after');
    assert.equal(code, 0, output);
    assert.match(output, /# pass 2/);
    assert.doesNotMatch(output, /left running/);
  });
});
