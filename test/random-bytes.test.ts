import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pooledRandomBytes } from '../src/random-bytes.js';

describe('pooled random bytes', () => {
  it('never hands out the same bytes twice, across refills of the pool', () => {
    const seen = new Set<string>();
    // 12 and 32 do not divide the 4 KB pool: draws straddle its refills.
    for (let i = 0; i < 5_000; i++) {
      for (const size of [12, 32]) {
        const bytes = pooledRandomBytes(size);
        assert.equal(bytes.length, size);
        const hex = bytes.toString('hex');
        assert.ok(!seen.has(hex), `drawn twice: ${hex}`);
        seen.add(hex);
      }
    }
  });

  it('gives buffers of their own, and more than a pool holds when asked', () => {
    const first = pooledRandomBytes(16);
    const copy = Buffer.from(first);
    first.fill(0);
    assert.notDeepEqual(pooledRandomBytes(16), copy);
    assert.equal(pooledRandomBytes(10_000).length, 10_000);
    // Not all zero: the bytes are random (one chance in 2^128 of a false alarm).
    assert.ok(pooledRandomBytes(16).some((byte) => byte !== 0));
  });
});
