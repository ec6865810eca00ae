/** For leak-guard.test.ts: a test that leaves a worker thread running. */
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';

test('starts a thread and never ends it', () => {
  new Worker('setInterval(() => undefined, 1_000)', { eval: true });
});
