/** For leak-guard.test.ts: a test that leaves a timer running. */
import { test } from 'node:test';

test('sets a timer and never clears it', () => {
  setTimeout(() => undefined, 60_000);
});
