import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff } from '../../src/time/backoff.js';

describe('Backoff', () => {
  it('doubles each pause from the first up to the longest, and stays there', () => {
    const backoff = new Backoff(250, 5_000);
    assert.deepEqual(
      Array.from({ length: 8 }, () => backoff.next()),
      [250, 500, 1_000, 2_000, 4_000, 5_000, 5_000, 5_000],
    );
  });

  it('starts again from the first pause after reset()', () => {
    const backoff = new Backoff(100, 10_000);
    backoff.next();
    backoff.next();
    backoff.next();
    backoff.reset();
    assert.equal(backoff.next(), 100);
    assert.equal(backoff.next(), 200);
  });

  it('never pauses longer than the longest, even the first time', () => {
    const backoff = new Backoff(2_000, 500);
    assert.equal(backoff.next(), 500);
    backoff.reset();
    assert.equal(backoff.next(), 500);
  });
});
