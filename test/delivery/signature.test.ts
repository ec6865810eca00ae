/**
 * Our signatures as the official Standard Webhooks library reads them: it accepts what we
 * sign, and rejects it once the body, the timestamp or the id is changed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { signatureHeaders } from '../../src/delivery/signature.js';
import { generateSigningSecret } from '../../src/subscriptions/signing-secret.js';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const BODY = '{"specversion":"1.0","id":"1","source":"/s","type":"t","data":{"text":"é ✓ 🎉"}}';

describe('Standard Webhooks signatures', () => {
  it('verify with the standardwebhooks package', () => {
    const secret = generateSigningSecret();
    const headers = signatureHeaders({ id: 'a1b2', secrets: [secret] }, nowSeconds(), BODY);
    assert.equal(headers['webhook-id'], 'a1b2');
    assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(new Webhook(secret).verify(BODY, { ...headers }), JSON.parse(BODY));
  });

  it('are rejected once the body, the timestamp or the id changes, or with another secret', () => {
    const secret = generateSigningSecret();
    const timestamp = nowSeconds();
    const headers = { ...signatureHeaders({ id: 'a1b2', secrets: [secret] }, timestamp, BODY) };
    const webhook = new Webhook(secret);
    assert.throws(() => webhook.verify(BODY.replace('"1"', '"2"'), headers), /No matching signature/);
    assert.throws(() => webhook.verify(BODY, { ...headers, 'webhook-timestamp': String(timestamp - 1) }), /No matching signature/);
    assert.throws(() => webhook.verify(BODY, { ...headers, 'webhook-id': 'a1b3' }), /No matching signature/);
    assert.throws(() => new Webhook(generateSigningSecret()).verify(BODY, headers), /No matching signature/);
  });

  it('with two secrets carry two signatures, each verifying on its own', () => {
    const [current, previous] = [generateSigningSecret(), generateSigningSecret()];
    const headers = { ...signatureHeaders({ id: 'x', secrets: [current, previous] }, nowSeconds(), BODY) };
    assert.equal(headers['webhook-signature'].split(' ').length, 2);
    for (const secret of [current, previous]) assert.doesNotThrow(() => new Webhook(secret).verify(BODY, headers));
  });

  it('are refused by the library when the timestamp is too old: each attempt needs its own', () => {
    const secret = generateSigningSecret();
    const headers = { ...signatureHeaders({ id: 'x', secrets: [secret] }, nowSeconds() - 3600, BODY) };
    assert.throws(() => new Webhook(secret).verify(BODY, headers), /too old/);
  });
});
