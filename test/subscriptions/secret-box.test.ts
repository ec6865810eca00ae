import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ServiceError } from '../../src/errors.js';
import { isSealed, openSecret, sealSecret } from '../../src/subscriptions/secret-box.js';

const PLAIN = JSON.stringify({ type: 'basic', basic: { username: 'pipeline', password: 'pässword' } });
const WRONG_KEY = /^stored target credentials are encrypted; start the service with the NOTIFICATIONS_SECRET_KEY they were written with$/;

describe('secret box', () => {
  it('without a key, stores and opens the plain JSON text', () => {
    assert.equal(sealSecret(PLAIN, null), PLAIN);
    assert.equal(openSecret(PLAIN, null), PLAIN);
    assert.equal(isSealed(PLAIN), false);
  });

  it('with a key, seals as v1: + base64(IV, tag, ciphertext) and opens again', () => {
    const key = randomBytes(32);
    const sealed = sealSecret(PLAIN, key);
    assert.match(sealed, /^v1:[A-Za-z0-9+/]+=*$/);
    assert.ok(isSealed(sealed));
    assert.ok(!sealed.includes('pipeline'));
    assert.equal(Buffer.from(sealed.slice(3), 'base64').length, 12 + 16 + Buffer.byteLength(PLAIN));
    assert.equal(openSecret(sealed, key), PLAIN);
    assert.equal(openSecret(sealed, Buffer.from(key)), PLAIN, 'the same key bytes, another Buffer');
  });

  it('uses a fresh IV each time', () => {
    const key = randomBytes(32);
    const seals = new Set(Array.from({ length: 20 }, () => sealSecret(PLAIN, key)));
    assert.equal(seals.size, 20);
    const ivs = new Set([...seals].map((s) => Buffer.from(s.slice(3), 'base64').subarray(0, 12).toString('hex')));
    assert.equal(ivs.size, 20);
  });

  it('opens plain JSON with a key: a key added later', () => {
    assert.equal(openSecret(PLAIN, randomBytes(32)), PLAIN);
  });

  it('refuses a sealed value without the key or with another key, with a clear 500', () => {
    const sealed = sealSecret(PLAIN, randomBytes(32));
    for (const key of [null, randomBytes(32)]) {
      assert.throws(
        () => openSecret(sealed, key),
        (error: unknown) => {
          assert.ok(error instanceof ServiceError);
          assert.equal(error.statusCode, 500);
          assert.match(error.message, WRONG_KEY);
          assert.ok(!error.message.includes('pipeline'));
          return true;
        },
      );
    }
  });

  it('refuses altered or truncated values', () => {
    const key = randomBytes(32);
    const bytes = Buffer.from(sealSecret(PLAIN, key).slice(3), 'base64');
    for (const index of [0, 12, 28, bytes.length - 1]) {
      const altered = Buffer.from(bytes);
      altered[index] = altered[index]! ^ 1;
      assert.throws(() => openSecret(`v1:${altered.toString('base64')}`, key), ServiceError, `byte ${index}`);
    }
    assert.throws(() => openSecret(`v1:${bytes.subarray(0, 20).toString('base64')}`, key), /damaged/);
  });

  it('refuses a key that is not 32 bytes', () => {
    assert.throws(() => sealSecret(PLAIN, randomBytes(16)), /32 bytes/);
  });
});
