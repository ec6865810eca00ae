import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { classifyResponse } from '../../src/delivery/decision.js';
import { TOKEN_DEFAULT_LIFETIME_MS, TOKEN_RENEWAL_MARGIN_MS } from '../../src/delivery/oauth2-tokens.js';
import { createTargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import type { Auth } from '../../src/subscriptions/input.js';
import { startTokenEndpoint, startTokenTarget, type TokenEndpoint } from '../support/oauth2-servers.js';
import { DEFAULT_TARGET_RULES } from '../support/target-guard.js';

const CLIENT = { id: 'pipeline:1 ü', secret: 'top secret+/=' };
const EVENT = JSON.stringify({ specversion: '1.0', id: 'e-1', source: '/s', type: 't' });

async function scene(t: TestContext, options: { expiresIn?: number } = {}) {
  const endpoint = await startTokenEndpoint(CLIENT);
  if ('expiresIn' in options) endpoint.expiresIn = options.expiresIn;
  const target = await startTokenTarget(endpoint);
  let nowMs = Date.parse('2030-01-01T00:00:00Z');
  const client = createTargetClient({
    timeoutMs: 2_000,
    connectionsPerOrigin: 4,
    guard: addressGuard(DEFAULT_TARGET_RULES),
    now: () => nowMs,
  });
  t.after(async () => {
    await client.close();
    await Promise.all([endpoint.close(), target.close()]);
  });
  const auth = oauth2Auth(endpoint);
  return {
    endpoint,
    target,
    post: (using: Auth = auth) => client.post({ url: target.url, auth: using, body: EVENT }),
    advance: (ms: number) => (nowMs += ms),
  };
}

const oauth2Auth = (endpoint: TokenEndpoint, extra: { scope?: string; audience?: string } = {}): Auth => ({
  type: 'oauth2',
  oauth2: { token_url: endpoint.url, client_id: CLIENT.id, client_secret: CLIENT.secret, ...extra },
});

describe('target client: oauth2 client credentials', () => {
  it('fetches one token for many deliveries, concurrent ones waiting on the same request, and sends it as Bearer', async (t) => {
    const { endpoint, target, post } = await scene(t);
    const first = await Promise.all(Array.from({ length: 10 }, () => post()));
    const later = await Promise.all(Array.from({ length: 5 }, () => post()));
    for (const response of [...first, ...later]) assert.equal(response.status, 204);
    assert.equal(endpoint.issued(), 1);
    assert.equal(endpoint.forms.length, 1);
    assert.deepEqual([...endpoint.forms[0]!], [['grant_type', 'client_credentials']]);
    assert.deepEqual(new Set(target.authorizations), new Set(['Bearer token-1']));
  });

  it('sends scope and audience in the form, and keeps a token per set of credentials', async (t) => {
    const { endpoint, post } = await scene(t);
    const scoped = oauth2Auth(endpoint, { scope: 'events:write read', audience: 'https://pipeline.example' });
    assert.equal((await post(scoped)).status, 204);
    assert.deepEqual(Object.fromEntries(endpoint.forms[0]!), {
      grant_type: 'client_credentials',
      scope: 'events:write read',
      audience: 'https://pipeline.example',
    });
    assert.equal((await post()).status, 204);
    assert.equal((await post(scoped)).status, 204);
    assert.equal(endpoint.issued(), 2, 'one for the scoped client, one for the other');
  });

  it('renews the token shortly before expires_in runs out', async (t) => {
    const { endpoint, target, post, advance } = await scene(t, { expiresIn: 600 });
    assert.equal((await post()).status, 204);
    advance(600_000 - TOKEN_RENEWAL_MARGIN_MS - 1);
    assert.equal((await post()).status, 204);
    assert.equal(endpoint.issued(), 1, 'still fresh');
    advance(2);
    assert.equal((await post()).status, 204);
    assert.equal(endpoint.issued(), 2, 'renewed within the margin');
    assert.equal(target.authorizations.at(-1), 'Bearer token-2');
  });

  it('keeps a token that lives less than a minute for half its life, and one without expires_in for the default lifetime', async (t) => {
    const short = await scene(t, { expiresIn: 20 });
    await short.post();
    short.advance(9_999);
    await short.post();
    assert.equal(short.endpoint.issued(), 1);
    short.advance(2);
    await short.post();
    assert.equal(short.endpoint.issued(), 2);

    const unsaid = await scene(t, { expiresIn: undefined });
    await unsaid.post();
    unsaid.advance(TOKEN_DEFAULT_LIFETIME_MS - TOKEN_RENEWAL_MARGIN_MS - 1);
    await unsaid.post();
    assert.equal(unsaid.endpoint.issued(), 1);
    unsaid.advance(2);
    await unsaid.post();
    assert.equal(unsaid.endpoint.issued(), 2);
  });

  it('on a 401 fetches a new token once and tries again, once for all the deliveries that saw it', async (t) => {
    const { endpoint, target, post } = await scene(t);
    assert.equal((await post()).status, 204);
    endpoint.revoked.add('token-1');
    const responses = await Promise.all(Array.from({ length: 4 }, () => post()));
    for (const response of responses) assert.equal(response.status, 204);
    assert.equal(endpoint.issued(), 2, 'one renewal');
    assert.equal(target.authorizations.filter((header) => header === 'Bearer token-2').length, 4);
  });

  it('does not loop when the new token gets a 401 too: the 401 is the answer', async (t) => {
    const { endpoint, target, post } = await scene(t);
    const refuseAll = () => {
      for (let n = 1; n <= 10; n++) endpoint.revoked.add(`token-${n}`);
    };
    refuseAll();
    const response = await post();
    assert.equal(response.status, 401);
    assert.equal(endpoint.issued(), 2, 'the first token and one renewal');
    assert.deepEqual(target.authorizations, ['Bearer token-1', 'Bearer token-2']);
    assert.equal(classifyResponse(401).kind, 'permanent');
  });

  it('fails the attempt, to be retried, naming the token endpoint and its OAuth error, when the endpoint refuses', async (t) => {
    const { endpoint, target, post } = await scene(t);
    endpoint.refusal = { status: 400, error: 'invalid_scope', description: 'x'.repeat(500) };
    const response = await post();
    assert.equal(response.status, null);
    assert.equal(response.permanent, false);
    const origin = new URL(endpoint.url).origin;
    assert.equal(response.error, `token endpoint ${origin}/oauth/token answered 400: invalid_scope (${'x'.repeat(200)}…)`);
    assert.equal(target.authorizations.length, 0, 'nothing sent without a token');

    endpoint.refusal = null;
    assert.equal((await post()).status, 204, 'a failure is not kept');
  });

  it('names a wrong client secret as the endpoint says it, never quoting the secret', async (t) => {
    const { endpoint, post } = await scene(t);
    const wrong: Auth = { type: 'oauth2', oauth2: { token_url: endpoint.url, client_id: CLIENT.id, client_secret: 'not it' } };
    const response = await post(wrong);
    assert.match(
      response.error ?? '',
      /^token endpoint http:\/\/127\.0\.0\.1:\d+\/oauth\/token answered 401: invalid_client \(client authentication failed\)$/,
    );
    assert.ok(!(response.error ?? '').includes('not it'));
  });

  it('refuses a token endpoint at a denied address (permanent), and one that does not listen (retried)', async (t) => {
    const { post } = await scene(t);
    const at = (token_url: string): Auth => ({ type: 'oauth2', oauth2: { token_url, client_id: 'c', client_secret: 's' } });
    const denied = await post(at('http://169.254.169.254/token'));
    assert.equal(denied.status, null);
    assert.equal(denied.permanent, true);
    assert.match(denied.error ?? '', /^token endpoint http:\/\/169\.254\.169\.254: address 169\.254\.169\.254 is denied/);
    const closed = await post(at('http://127.0.0.1:9/token'));
    assert.equal(closed.permanent, false);
    assert.equal(closed.error, 'token endpoint http://127.0.0.1:9/token: connection refused');
  });
});
