import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_RETRY_AFTER_MS, nextDelayMs, parseRetryAfter } from '../../src/runners/retry-schedule.js';

const SCHEDULE = [1000, 5000, 30000];
const always = (value: number) => () => value;

describe('nextDelayMs', () => {
  it('takes the schedule entry of the last failed try, scaled by 0.8 + 0.4 * random()', () => {
    assert.equal(nextDelayMs(1, SCHEDULE, always(0)), 800);
    assert.equal(nextDelayMs(1, SCHEDULE, always(0.5)), 1000);
    assert.equal(nextDelayMs(2, SCHEDULE, always(0.25)), 4500);
    assert.equal(nextDelayMs(3, SCHEDULE, always(0.999)), 35988);
    assert.equal(nextDelayMs(3, SCHEDULE, always(0.123456)), 25481);
  });

  it('calls random once per delay, so a sequence of random values replays exactly', () => {
    const values = [0.1, 0.9, 0.5];
    const random = () => values.shift() ?? assert.fail('random called too often');
    assert.deepEqual(
      [1, 2, 3].map((n) => nextDelayMs(n, SCHEDULE, random)),
      [840, 5800, 30000],
    );
  });

  it('gives up (undefined) once the schedule is exhausted', () => {
    assert.equal(nextDelayMs(4, SCHEDULE, always(0.5)), undefined);
    assert.equal(nextDelayMs(1, [], always(0.5)), undefined);
    assert.equal(nextDelayMs(0, SCHEDULE, always(0.5)), undefined);
  });

  it('waits at least as long as Retry-After asks, capped at 24 h, and never shorter than the schedule', () => {
    assert.equal(nextDelayMs(1, SCHEDULE, always(0.5), 60_000), 60_000);
    assert.equal(nextDelayMs(1, SCHEDULE, always(0.5), 500), 1000);
    assert.equal(nextDelayMs(1, SCHEDULE, always(0.5), 0), 1000);
    assert.equal(nextDelayMs(1, SCHEDULE, always(0.5), 10 * MAX_RETRY_AFTER_MS), MAX_RETRY_AFTER_MS);
    assert.equal(MAX_RETRY_AFTER_MS, 86_400_000);
  });

  it('does not extend an exhausted schedule for a Retry-After', () => {
    assert.equal(nextDelayMs(4, SCHEDULE, always(0.5), 1000), undefined);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2015, 9, 21, 7, 26, 0);

  it('reads delta-seconds', () => {
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter(' 5 ', now), 5000);
    assert.equal(parseRetryAfter('0', now), 0);
  });

  it('reads the three HTTP-date forms, measured from now', () => {
    assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', now), 120_000);
    assert.equal(parseRetryAfter('Wednesday, 21-Oct-15 07:28:00 GMT', now), 120_000);
    assert.equal(parseRetryAfter('Wed Oct 21 07:28:00 2015', now), 120_000);
    assert.equal(parseRetryAfter('Sun Nov  6 08:49:37 1994', Date.UTC(1994, 10, 6, 8, 49, 0)), 37_000);
  });

  it('gives 0 for a date in the past', () => {
    assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:00:00 GMT', now), 0);
  });

  it('ignores what is neither delta-seconds nor an HTTP-date', () => {
    for (const header of [undefined, '', 'soon', '-1', '1.5', '2015-10-21', 'Wed, 21 Oct 2015 07:28:00', 'Wed, 31 Feb 2015 07:28:00 GMT']) {
      assert.equal(parseRetryAfter(header, now), undefined, String(header));
    }
  });
});
