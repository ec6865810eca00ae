import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildApp } from '../../src/api/app.js';
import { assertErrorShape, exchange } from './raw-http.js';

describe('a request that does not arrive whole in time', () => {
  it('is answered 408 in our shape, and its connection closed', async () => {
    const app = await buildApp({ maxBodyBytes: 1024, logger: 'silent', version: 'test', requestTimeoutMs: 300 }, [
      (app) => {
        app.post('/echo', async (request) => request.body);
      },
    ]);
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const port = (app.server.address() as { port: number }).port;
      const started = performance.now();
      // Ten bytes promised, two sent, and the connection kept open.
      const [response] = await exchange(
        port,
        'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{}',
        { timeoutMs: 5_000 },
      );
      assertErrorShape(response!, 408, /^request: not received in time$/, 'REQUEST_TIMEOUT');
      assert.ok(performance.now() - started < 3_000, 'answered soon after the time-out, not at the next 30 s check');
    } finally {
      await app.close();
    }
  });
});
