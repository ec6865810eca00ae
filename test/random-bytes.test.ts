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

  it('copies each draw out before wiping it from the pool, and draws more than a pool holds directly', () => {
    // A slice of the pool would be zeros once wiped; a copy keeps its random bytes.
    for (let i = 0; i < 100; i++)
      assert.ok(
        pooledRandomBytes(16).some((byte) => byte !== 0),
        'a draw was wiped',
      );
    assert.equal(pooledRandomBytes(10_000).length, 10_000);
  });
});
