import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it, type TestContext } from 'node:test';
import { allowAll, createPolicyClient } from '../../src/policy/policy-client.js';
import { type ReceivedRequest, type StubServer, startStubServer, unusedPort } from '../delivery/stub-server.js';

/** As the log keeps it: the spacing shows that it is sent as it is, not parsed and written again. */
const EVENT = '{"specversion": "1.0", "id": "e-1", "source": "/metadata", "type": "org.example.upload", "data": [{"project": 1234}]}';

async function policyService(t: TestContext, answer: (request: ReceivedRequest, response: ServerResponse) => void): Promise<StubServer> {
  const stub = await startStubServer(answer);
  t.after(() => stub.close());
  return stub;
}

function client(t: TestContext, baseUrl: string, timeoutMs = 2000) {
  const policy = createPolicyClient({ baseUrl, timeoutMs });
  t.after(() => policy.close());
  return policy;
}

const status =
  (code: number, body = '') =>
  (_request: ReceivedRequest, response: ServerResponse) => {
    response.writeHead(code).end(body);
  };

describe('policy client', () => {
  it('POSTs the event JSON, byte for byte as logged, to {baseUrl}/events/{user}, the user URL-encoded', async (t) => {
    const stub = await policyService(t, status(200));
    const answer = await client(t, `${stub.origin}/policy/`).ask('dr. a/b@lab', EVENT);
    assert.deepEqual(answer, { kind: 'allow', status: 200 });
    const [received] = stub.received;
    assert.equal(received?.method, 'POST');
    assert.equal(received?.url, '/policy/events/dr.%20a%2Fb%40lab');
    assert.equal(received?.headers['content-type'], 'application/json');
    assert.equal(received?.body, EVENT);
  });

  it('allows on 2xx and denies on 4xx, keeping the status', async (t) => {
    const codes = [200, 204, 400, 403, 404, 451];
    const stub = await policyService(t, (request, response) =>
      response.writeHead(Number(request.url.split('/').pop())).end('{"detail":"x"}'),
    );
    const policy = client(t, stub.origin);
    const answers = await Promise.all(codes.map((code) => policy.ask(String(code), EVENT)));
    assert.deepEqual(answers, [
      { kind: 'allow', status: 200 },
      { kind: 'allow', status: 204 },
      { kind: 'deny', status: 400 },
      { kind: 'deny', status: 403 },
      { kind: 'deny', status: 404 },
      { kind: 'deny', status: 451 },
    ]);
  });

  it('retries on 5xx, and on a redirect, which it does not follow', async (t) => {
    const stub = await policyService(t, (request, response) =>
      request.url.endsWith('/moved') ? response.writeHead(302, { location: '/elsewhere' }).end() : response.writeHead(503).end('down'),
    );
    const policy = client(t, stub.origin);
    assert.deepEqual(await policy.ask('alice', EVENT), {
      kind: 'retry',
      status: 503,
      error: 'policy service answered 503 Service Unavailable',
    });
    assert.deepEqual(await policy.ask('moved', EVENT), {
      kind: 'retry',
      status: 302,
      error: 'policy service answered 302 Found (redirects are not followed)',
    });
    assert.equal(stub.received.length, 2);
  });

  it('retries when the policy service does not answer in time', async (t) => {
    const stub = await policyService(t, () => {}); // never answers
    const started = performance.now();
    const answer = await client(t, stub.origin, 250).ask('alice', EVENT);
    assert.deepEqual(answer, { kind: 'retry', status: null, error: 'time-out after 250 ms' });
    // Without the time-out it would wait for ever: the bound only needs to hold on a loaded machine.
    assert.ok(performance.now() - started < 5_000);
  });

  it('retries when the policy service refuses connections', async (t) => {
    const port = await unusedPort();
    assert.deepEqual(await client(t, `http://127.0.0.1:${port}`).ask('alice', EVENT), {
      kind: 'retry',
      status: null,
      error: 'connection refused',
    });
  });

  it('reuses its connection', async (t) => {
    const stub = await policyService(t, status(200, 'ok'));
    const policy = client(t, stub.origin);
    for (let i = 0; i < 20; i++) await policy.ask(`user${i}`, EVENT);
    assert.ok(stub.connections() <= 2, `${stub.connections()} connections`);
  });

  it('is not guarded: the operator chose the address', async (t) => {
    const stub = await policyService(t, status(200));
    assert.deepEqual(await client(t, `http://localhost:${stub.port}`).ask('alice', EVENT), { kind: 'allow', status: 200 });
  });
});

describe('allowAll', () => {
  it('allows everyone with status 200, asking nobody', async () => {
    assert.deepEqual(await allowAll.ask('anyone', EVENT), { kind: 'allow', status: 200 });
    await allowAll.close();
  });
});
