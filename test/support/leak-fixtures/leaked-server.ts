/** For leak-guard.test.ts: a test that leaves a server listening. */
import { createServer } from 'node:http';
import { test } from 'node:test';

test('listens and never closes', async () => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
