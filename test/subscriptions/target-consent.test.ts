/**
 * The consent handshake against real HTTP servers on 127.0.0.1: what is sent, what counts as
 * consent, and every way a target can fail to give it, each named in the refusal.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ServiceError } from '../../src/errors.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { type ConsentRequest, targetConsent } from '../../src/subscriptions/target-consent.js';
import { type HttpStub, reply, startStub } from '../support/http-stub.js';
import { startTokenEndpoint } from '../support/oauth2-servers.js';
import { defaultTargetGuard } from '../support/target-guard.js';

const ORIGIN = 'notifications.example.org';

describe('target consent handshake', () => {
  let stub: HttpStub;
  const consent = targetConsent({ origin: ORIGIN, timeoutMs: 1_000, guard: defaultTargetGuard() });
  const ask = (overrides: Partial<ConsentRequest> = {}) =>
    consent.ask({ targetUrl: `${stub.url}/hook?x=1`, auth: {}, ratePerSecond: null, ...overrides });

  async function refusal(overrides: Partial<ConsentRequest> = {}): Promise<ServiceError> {
    const error = await ask(overrides).then(
      () => assert.fail('consent was expected to be refused'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ServiceError, String(error));
    return error;
  }

  before(async () => {
    stub = await startStub();
  });
  after(async () => {
    await stub.close();
  });

  it('sends OPTIONS to the target URL with our origin, the rate asked per minute and the credentials', async () => {
    stub.answer(reply(200, '', { 'webhook-allowed-origin': ORIGIN, 'webhook-allowed-rate': '120' }));
    const before = stub.requests.length;
    assert.deepEqual(await ask({ ratePerSecond: 5, auth: { type: 'header', header: { type: 'Bearer', credentials: 't0ken' } } }), {
      allowedPerMinute: 120,
    });
    const [sent, ...more] = stub.requests.slice(before);
    assert.equal(more.length, 0);
    assert.equal(sent!.method, 'OPTIONS');
    assert.equal(sent!.url, '/hook?x=1');
    assert.equal(sent!.headers['webhook-request-origin'], ORIGIN);
    assert.equal(sent!.headers['webhook-request-rate'], '300');
    assert.equal(sent!.headers.authorization, 'Bearer t0ken');
  });

  it('asks with a token of an oauth2 client, and names a token endpoint that refuses', async () => {
    const endpoint = await startTokenEndpoint({ id: 'c', secret: 's' });
    try {
      stub.answer(reply(204, '', { 'webhook-allowed-origin': ORIGIN }));
      const auth = { type: 'oauth2' as const, oauth2: { token_url: endpoint.url, client_id: 'c', client_secret: 's' } };
      await ask({ auth });
      assert.equal(stub.requests.at(-1)!.headers.authorization, 'Bearer token-1');
      endpoint.refusal = { status: 400, error: 'invalid_client', description: 'suspended' };
      const before = stub.requests.length;
      const refused = await refusal({ auth });
      assert.equal(
        refused.message,
        'body.target_url: the target did not consent to deliveries (NOTIFICATIONS_TARGET_VALIDATION=handshake): no access token to ask with: ' +
          `token endpoint ${new URL(endpoint.url).origin}/oauth/token answered 400: invalid_client (suspended)`,
      );
      assert.equal(stub.requests.length, before, 'the target is not asked without a token');
    } finally {
      await endpoint.close();
    }
  });

  it('asks for the most a subscription may have (10,000 a second) when it has no rate_limit', async () => {
    stub.answer(reply(204, '', { 'webhook-allowed-origin': '*' }));
    assert.deepEqual(await ask(), { allowedPerMinute: null });
    assert.equal(stub.requests.at(-1)!.headers['webhook-request-rate'], '600000');
  });

  it('takes "*" and an absent WebHook-Allowed-Rate as no cap', async () => {
    stub.answer(reply(200, 'ok', { 'webhook-allowed-origin': ORIGIN, 'webhook-allowed-rate': '*' }));
    assert.deepEqual(await ask(), { allowedPerMinute: null });
    stub.answer(reply(200, '', { 'webhook-allowed-origin': ORIGIN }));
    assert.deepEqual(await ask(), { allowedPerMinute: null });
  });

  const refusals: Array<[string, Parameters<typeof reply>, RegExp]> = [
    ['405, as a target that knows nothing of the handshake answers', [405], /OPTIONS answered 405$/],
    ['a 2xx without WebHook-Allowed-Origin', [200, 'hello'], /OPTIONS answered 200 without WebHook-Allowed-Origin/],
    [
      'another origin',
      [200, '', { 'webhook-allowed-origin': 'someone.else' }],
      /WebHook-Allowed-Origin is "someone.else", not "notifications.example.org" or "\*"/,
    ],
    [
      'a 403 even with our origin',
      [403, '', { 'webhook-allowed-origin': ORIGIN }],
      /OPTIONS answered 403 \(WebHook-Allowed-Origin: notifications.example.org\)/,
    ],
    ['a redirect, not followed', [301, '', { location: 'http://127.0.0.1:1/' }], /OPTIONS answered 301/],
    [
      'a rate of 0',
      [200, '', { 'webhook-allowed-origin': '*', 'webhook-allowed-rate': '0' }],
      /WebHook-Allowed-Rate is "0", not "\*" or a positive whole number/,
    ],
    [
      'a rate that is not a number',
      [200, '', { 'webhook-allowed-origin': '*', 'webhook-allowed-rate': 'lots' }],
      /WebHook-Allowed-Rate is "lots"/,
    ],
  ];
  for (const [label, answer, message] of refusals) {
    it(`refuses ${label}, naming target_url and what the target answered`, async () => {
      stub.answer(reply(...answer));
      const error = await refusal();
      assert.equal(error.code, 'TARGET_CONSENT_REFUSED');
      assert.equal(error.statusCode, 400);
      assert.match(
        error.message,
        /^body\.target_url: the target did not consent to deliveries \(NOTIFICATIONS_TARGET_VALIDATION=handshake\): /,
      );
      assert.match(error.message, message);
    });
  }

  it('refuses two different origins in one answer', async () => {
    stub.answer((_request, response) => {
      response.setHeader('webhook-allowed-origin', ['*', 'someone.else']);
      response.writeHead(200).end();
    });
    assert.match((await refusal()).message, /WebHook-Allowed-Origin is "\*, someone.else"/);
  });

  it('cuts a long header value short in the message', async () => {
    stub.answer(reply(200, '', { 'webhook-allowed-origin': 'x'.repeat(5_000) }));
    const { message } = await refusal();
    assert.match(message, /WebHook-Allowed-Origin is "x{200}…"/);
    assert.ok(message.length < 500);
  });

  it('refuses a target that does not answer in time, within the time-out', async () => {
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const started = performance.now();
      const error = await refusal({ targetUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook` });
      assert.match(error.message, /no answer to OPTIONS http:\/\/127\.0\.0\.1:\d+\/hook: time-out after 1000 ms/);
      assert.ok(performance.now() - started < 5_000);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('refuses a target that is not listening', async () => {
    const closed = await startStub();
    const url = `${closed.url}/hook`;
    await closed.close();
    assert.match((await refusal({ targetUrl: url })).message, /no answer to OPTIONS .*: connection refused/);
  });

  it('never connects to an address the guard denies, named or literal', async () => {
    const guarded = targetConsent({
      origin: ORIGIN,
      timeoutMs: 1_000,
      guard: addressGuard({ allow: [], deny: ['127.0.0.0/8', '::1/128'] }),
    });
    stub.answer(reply(200, '', { 'webhook-allowed-origin': '*' }));
    const before = stub.requests.length;
    const port = new URL(stub.url).port;
    const literal = await guarded.ask({ targetUrl: `http://127.0.0.1:${port}/`, auth: {}, ratePerSecond: null }).catch((e: unknown) => e);
    assert.ok(literal instanceof ServiceError);
    assert.equal(literal.code, 'TARGET_DENIED');
    const named = await guarded.ask({ targetUrl: `http://localhost:${port}/`, auth: {}, ratePerSecond: null }).catch((e: unknown) => e);
    assert.ok(named instanceof ServiceError);
    assert.equal(named.code, 'TARGET_CONSENT_REFUSED');
    assert.match(named.message, /denied by NOTIFICATIONS_TARGET_DENY/);
    assert.equal(stub.requests.length, before, 'no request reached the target');
  });
});
