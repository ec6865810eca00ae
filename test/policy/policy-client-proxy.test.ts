/** Policy calls through the egress proxy, as deliveries go: a real forward proxy and policy service on 127.0.0.1. */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { EgressSettings } from '../../src/net/egress-proxy.js';
import { createPolicyClient } from '../../src/policy/policy-client.js';
import { type StubServer, startStubServer } from '../delivery/stub-server.js';
import { type ForwardProxy, startForwardProxy } from '../support/forward-proxy.js';

describe('policy client through the egress proxy', () => {
  let proxy: ForwardProxy;
  let policy: StubServer;

  before(async () => {
    proxy = await startForwardProxy();
    policy = await startStubServer((request, response) => response.writeHead(request.url.endsWith('/bob') ? 403 : 200).end());
  });
  after(async () => {
    await Promise.all([proxy.close(), policy.close()]);
  });

  function client(t: TestContext, egress: EgressSettings) {
    const created = createPolicyClient({ baseUrl: `http://127.0.0.1:${policy.port}/policy/`, timeoutMs: 2000, egress });
    t.after(() => created.close());
    return created;
  }

  it('asks the policy service through a tunnel of the proxy, with the proxy credentials', async (t) => {
    proxy.seen.length = 0;
    const egress = { httpProxy: `http://egress:pw@127.0.0.1:${proxy.port}`, httpsProxy: null, noProxy: [] };
    assert.deepEqual(await client(t, egress).ask('alice', '{}'), { kind: 'allow', status: 200 });
    assert.deepEqual(await client(t, egress).ask('bob', '{}'), { kind: 'deny', status: 403 });
    assert.deepEqual(
      proxy.seen.map(({ method, target, proxyAuthorization }) => [method, target, proxyAuthorization !== undefined]),
      [
        ['CONNECT', `127.0.0.1:${policy.port}`, true],
        ['CONNECT', `127.0.0.1:${policy.port}`, true],
      ],
    );
    assert.deepEqual(
      policy.received.slice(-2).map((request) => request.url),
      ['/policy/events/alice', '/policy/events/bob'],
    );
    assert.equal(policy.received.at(-1)?.headers['proxy-authorization'], undefined);
  });

  it('goes direct to a policy service in NO_PROXY', async (t) => {
    proxy.seen.length = 0;
    const egress = { httpProxy: proxy.origin, httpsProxy: proxy.origin, noProxy: ['127.0.0.1'] };
    assert.deepEqual(await client(t, egress).ask('alice', '{}'), { kind: 'allow', status: 200 });
    assert.deepEqual(proxy.seen, []);
  });

  it('retries later when the proxy refuses, naming it', async (t) => {
    proxy.seen.length = 0;
    proxy.refuse(407);
    t.after(() => proxy.refuse(null));
    const answer = await client(t, { httpProxy: proxy.origin, httpsProxy: null, noProxy: [] }).ask('alice', '{}');
    assert.deepEqual(answer, {
      kind: 'retry',
      status: null,
      error: `egress proxy ${proxy.origin} refused CONNECT 127.0.0.1:${policy.port}: answered 407 Proxy Authentication Required`,
    });
  });
});
