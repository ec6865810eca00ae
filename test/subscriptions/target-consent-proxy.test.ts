/**
 * The consent handshake goes through the egress proxy as deliveries do: a facility whose targets
 * are reachable only through it could not otherwise store a subscription with the handshake on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ServiceError } from '../../src/errors.js';
import { addressGuard, type ResolveAll } from '../../src/net/address-guard.js';
import { targetConsent } from '../../src/subscriptions/target-consent.js';
import { type ForwardProxy, startForwardProxy } from '../support/forward-proxy.js';
import { type HttpStub, reply, startStub } from '../support/http-stub.js';
import { DEFAULT_TARGET_RULES } from '../support/target-guard.js';

const ORIGIN = 'notifications.example.org';
const NAME = 'target.example.test';

const resolveAll: ResolveAll = (hostname, _options, callback) => {
  if (hostname === NAME) return callback(null, [{ address: '127.0.0.1', family: 4 }]);
  callback(null, [{ address: '169.254.169.254', family: 4 }]);
};

describe('target consent through the egress proxy', () => {
  let proxy: ForwardProxy;
  let target: HttpStub;
  const consent = () =>
    targetConsent({
      origin: ORIGIN,
      timeoutMs: 2_000,
      guard: addressGuard(DEFAULT_TARGET_RULES, resolveAll),
      egress: { httpProxy: proxy.origin, httpsProxy: proxy.origin, noProxy: [] },
    });

  before(async () => {
    proxy = await startForwardProxy();
    target = await startStub(reply(200, '', { 'webhook-allowed-origin': ORIGIN }));
  });
  after(async () => {
    await Promise.all([proxy.close(), target.close()]);
  });

  it('asks the target through the proxy for the checked address, Host the name', async () => {
    const port = new URL(target.url).port;
    assert.deepEqual(await consent().ask({ targetUrl: `http://${NAME}:${port}/hook`, auth: {}, ratePerSecond: null }), {
      allowedPerMinute: null,
    });
    assert.deepEqual(
      proxy.seen.map(({ method, target: line }) => [method, line]),
      [['CONNECT', `127.0.0.1:${port}`]],
    );
    assert.equal(target.requests[0]?.headers.host, `${NAME}:${port}`);
  });

  it('refuses a name that resolves to a denied address without asking the proxy', async () => {
    proxy.seen.length = 0;
    const error = await consent()
      .ask({ targetUrl: 'http://metadata.example.test/hook', auth: {}, ratePerSecond: null })
      .then(
        () => assert.fail('consent was expected to be refused'),
        (e: unknown) => e,
      );
    assert.ok(error instanceof ServiceError, String(error));
    assert.match(error.message, /every address of metadata\.example\.test is refused/);
    assert.deepEqual(proxy.seen, []);
  });
});
