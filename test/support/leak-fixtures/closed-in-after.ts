/**
 * For leak-guard.test.ts: what a test opens and the file's own `after` hook closes is not a
 * leak, even when that hook is registered after the guard's.
 */
import { createServer, type Server } from 'node:http';
import { after, describe, it, test } from 'node:test';

let server: Server | undefined;
let timer: NodeJS.Timeout | undefined;

describe('a suite', () => {
  it('listens', async () => {
    server = createServer();
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  });
});

test('sets a timer', () => {
  timer = setTimeout(() => undefined, 60_000);
});

after(async () => {
  clearTimeout(timer);
  await new Promise<void>((resolve) => server!.close(() => resolve()));
});
