import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lowestLimit, RateLimiter } from '../../src/delivery/rate-limiter.js';

/** A clock the test moves by hand (µs). */
function manualClock(start = 1_000_000) {
  let now = start;
  return { clock: () => now, advanceMs: (ms: number) => void (now += ms * 1000) };
}

describe('rate limiter', () => {
  it('spaces the starts of one key 1/rate apart', () => {
    const { clock, advanceMs } = manualClock();
    const limiter = new RateLimiter(clock);
    assert.equal(limiter.tryStart('a', 5), true);
    assert.equal(limiter.tryStart('a', 5), false, 'a second start at once is over 5 a second');
    assert.equal(limiter.waitUs('a'), 200_000);
    advanceMs(199);
    assert.equal(limiter.tryStart('a', 5), false);
    assert.equal(limiter.waitUs('a'), 1_000);
    advanceMs(1);
    assert.equal(limiter.waitUs('a'), 0);
    assert.equal(limiter.tryStart('a', 5), true);
  });

  it('lets no second see more than the rate start, however often it is asked', () => {
    const { clock, advanceMs } = manualClock();
    const limiter = new RateLimiter(clock);
    const starts: number[] = [];
    for (let ms = 0; ms < 10_000; ms++) {
      if (limiter.tryStart('a', 7)) starts.push(ms);
      advanceMs(1);
    }
    for (const first of starts) assert.ok(starts.filter((t) => t >= first && t < first + 1000).length <= 7, `a second from ${first} ms`);
    // And it is not far below the rate either: 10 s at 7 a second.
    assert.ok(starts.length >= 69, `${starts.length} starts`);
  });

  it('keeps keys apart, and a key not limited waits for nothing', () => {
    const { clock } = manualClock();
    const limiter = new RateLimiter(clock);
    assert.equal(limiter.tryStart('a', 1), true);
    assert.equal(limiter.tryStart('b', 1), true);
    assert.equal(limiter.tryStart('a', 1), false);
    assert.equal(limiter.waitUs('never-started'), 0);
  });

  it('applies the rate given at each start: a higher one takes effect from the next start', () => {
    const { clock, advanceMs } = manualClock();
    const limiter = new RateLimiter(clock);
    assert.equal(limiter.tryStart('a', 1), true);
    advanceMs(1_000);
    assert.equal(limiter.tryStart('a', 100), true);
    advanceMs(10);
    assert.equal(limiter.tryStart('a', 100), true);
  });

  it('forgets keys whose wait is over once it keeps many, and they start as before', () => {
    const { clock, advanceMs } = manualClock();
    const limiter = new RateLimiter(clock);
    for (let i = 0; i < 2_000; i++) assert.equal(limiter.tryStart(`k${i}`, 10), true);
    advanceMs(100);
    assert.equal(limiter.tryStart('k1', 10), true);
    assert.equal(limiter.tryStart('k1', 10), false);
  });
});

describe('lowestLimit', () => {
  it('is the lowest of the limits set, or null when none is', () => {
    assert.equal(lowestLimit(null), null);
    assert.equal(lowestLimit(undefined, null), null);
    assert.equal(lowestLimit(5), 5);
    assert.equal(lowestLimit(5, 2), 2);
    assert.equal(lowestLimit(null, 3), 3);
  });
});
