import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Keyring } from '../../src/config/keyring.js';
import { ServiceError } from '../../src/errors.js';
import { isSealed, openSecret, resealSecret, sealSecret } from '../../src/subscriptions/secret-box.js';

const PLAIN = JSON.stringify({ type: 'basic', basic: { username: 'pipeline', password: 'pässword' } });
const newKey = () => new Keyring([randomBytes(32)]);
const WRONG_KEY = /^stored target credentials are encrypted; start the service with the NOTIFICATIONS_SECRET_KEY they were written with$/;

describe('secret box', () => {
  it('without a key, stores and opens the plain JSON text', () => {
    assert.equal(sealSecret(PLAIN, null), PLAIN);
    assert.equal(openSecret(PLAIN, null), PLAIN);
    assert.equal(isSealed(PLAIN), false);
  });

  it('with a key, seals as v1: + base64(IV, tag, ciphertext) and opens again', () => {
    const key = newKey();
    const sealed = sealSecret(PLAIN, key);
    assert.match(sealed, /^v1:[A-Za-z0-9+/]+=*$/);
    assert.ok(isSealed(sealed));
    assert.ok(!sealed.includes('pipeline'));
    assert.equal(Buffer.from(sealed.slice(3), 'base64').length, 12 + 16 + Buffer.byteLength(PLAIN));
    assert.equal(openSecret(sealed, key), PLAIN);
    assert.equal(openSecret(sealed, new Keyring([Buffer.from(key.sealing)])), PLAIN, 'the same key bytes, another Buffer');
  });

  it('uses a fresh IV each time', () => {
    const key = newKey();
    const seals = new Set(Array.from({ length: 20 }, () => sealSecret(PLAIN, key)));
    assert.equal(seals.size, 20);
    const ivs = new Set([...seals].map((s) => Buffer.from(s.slice(3), 'base64').subarray(0, 12).toString('hex')));
    assert.equal(ivs.size, 20);
  });

  it('opens plain JSON with a key: a key added later', () => {
    assert.equal(openSecret(PLAIN, newKey()), PLAIN);
  });

  it('refuses a sealed value without the key or with another key, with a clear 500', () => {
    const sealed = sealSecret(PLAIN, newKey());
    for (const key of [null, newKey()]) {
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
    const key = newKey();
    const bytes = Buffer.from(sealSecret(PLAIN, key).slice(3), 'base64');
    for (const index of [0, 12, 28, bytes.length - 1]) {
      const altered = Buffer.from(bytes);
      altered[index] = altered[index]! ^ 1;
      assert.throws(() => openSecret(`v1:${altered.toString('base64')}`, key), ServiceError, `byte ${index}`);
    }
    assert.throws(() => openSecret(`v1:${bytes.subarray(0, 20).toString('base64')}`, key), /damaged/);
  });

  it('refuses a key that is not 32 bytes', () => {
    assert.throws(() => new Keyring([randomBytes(16)]), /32 bytes/);
    assert.throws(() => new Keyring([randomBytes(32), randomBytes(31)]), /32 bytes/);
    assert.throws(() => new Keyring([]), /at least one key/);
  });
});

describe('secret box with several keys', () => {
  const [a, b, c] = [randomBytes(32), randomBytes(32), randomBytes(32)];

  it('seals under the first key; any key of the ring opens', () => {
    const sealedByA = sealSecret(PLAIN, new Keyring([a]));
    assert.equal(openSecret(sealedByA, new Keyring([b, a])), PLAIN, 'the old key second');
    assert.equal(openSecret(sealedByA, new Keyring([b, c, a])), PLAIN, 'the old key last');
    const sealedByBA = sealSecret(PLAIN, new Keyring([b, a]));
    assert.equal(openSecret(sealedByBA, new Keyring([b])), PLAIN, 'the first key sealed it');
    assert.throws(() => openSecret(sealedByBA, new Keyring([a])), { message: WRONG_KEY }, 'not the second');
    assert.throws(() => openSecret(sealedByA, new Keyring([b, c])), { message: WRONG_KEY }, 'no key of the ring');
  });

  it('reseals under the first key what another key sealed, and leaves what the first key sealed', () => {
    const ring = new Keyring([b, a]);
    const sealedByA = sealSecret(PLAIN, new Keyring([a]));
    const resealed = resealSecret(sealedByA, ring);
    assert.ok(resealed !== undefined && isSealed(resealed));
    assert.equal(openSecret(resealed, new Keyring([b])), PLAIN, 'opens with the first key alone');
    assert.equal(resealSecret(resealed, ring), undefined, 'already under the first key');
    const fromPlain = resealSecret(PLAIN, ring);
    assert.equal(openSecret(fromPlain!, new Keyring([b])), PLAIN, 'plain text is sealed');
    assert.throws(() => resealSecret(sealSecret(PLAIN, new Keyring([c])), ring), { message: WRONG_KEY }, 'no key opens it');
  });
});
