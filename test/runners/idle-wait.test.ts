import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IdleWait } from '../../src/runners/idle-wait.js';

const S = 1_000_000;

describe('idle wait', () => {
  it('doubles each quiet round while holding nothing, up to the longest, and starts over on work', () => {
    const wait = new IdleWait(1_000, 30_000);
    assert.deepEqual(
      Array.from({ length: 7 }, () => wait.next(0, false)),
      [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000],
    );
    wait.reset();
    assert.equal(wait.next(0, false), 1_000);
  });

  it('polls every pollMs while holding work, and starts over after it', () => {
    const wait = new IdleWait(1_000, 30_000);
    wait.next(0, false);
    wait.next(0, false);
    assert.equal(wait.next(0, true), 1_000);
    assert.equal(wait.next(0, false), 1_000);
  });

  it('ends the wait when a retry it scheduled comes due, until a claim made after it', () => {
    const wait = new IdleWait(1_000, 30_000);
    for (let i = 0; i < 6; i++) wait.next(0, false);
    wait.scheduled(100 * S + 5 * S);
    assert.equal(wait.next(100 * S, false), 5_000);
    // Due, but no claim made since (the claims' pacing held it back): soon.
    assert.equal(wait.next(105 * S, false), 100);
    wait.claimed(105 * S);
    assert.equal(wait.next(105 * S, false), 30_000);
  });
});
