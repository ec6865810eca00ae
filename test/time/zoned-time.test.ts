import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UnknownTimeZone, zonedTimes } from '../../src/time/zoned-time.js';

const utc = (iso: string) => Date.parse(`${iso}Z`) * 1000;

describe('zoned wall-clock times', () => {
  it('reads UTC times as they are, with up to six fractional digits', () => {
    const times = zonedTimes('UTC');
    assert.equal(times.micros('2019-06-01 12:34:56'), utc('2019-06-01T12:34:56'));
    assert.equal(times.micros('2019-06-01 12:34:56.123456'), utc('2019-06-01T12:34:56') + 123_456);
    assert.equal(times.micros('2019-06-01T12:34:56.5'), utc('2019-06-01T12:34:56') + 500_000);
  });

  it('applies the offset in force at that time: winter and summer', () => {
    const berlin = zonedTimes('Europe/Berlin');
    assert.equal(berlin.micros('2020-01-15 10:00:00'), utc('2020-01-15T09:00:00'));
    assert.equal(berlin.micros('2020-07-15 10:00:00.000007'), utc('2020-07-15T08:00:00') + 7);
    const newYork = zonedTimes('America/New_York');
    assert.equal(newYork.micros('2020-01-15 10:00:00'), utc('2020-01-15T15:00:00'));
    assert.equal(newYork.micros('2020-07-15 10:00:00'), utc('2020-07-15T14:00:00'));
  });

  it('reads the repeated hour at the end of summer time as its first occurrence', () => {
    const berlin = zonedTimes('Europe/Berlin');
    // 2020-10-25: 03:00 CEST became 02:00 CET, so 02:30 happened at 00:30 and again at 01:30 UTC.
    assert.equal(berlin.micros('2020-10-25 02:30:00'), utc('2020-10-25T00:30:00'));
    assert.equal(berlin.micros('2020-10-25 03:30:00'), utc('2020-10-25T02:30:00'));
  });

  it('reads a skipped time with the offset before the change', () => {
    const berlin = zonedTimes('Europe/Berlin');
    // 2020-03-29: 02:00 CET became 03:00 CEST; 02:30 never showed, and is read as 03:30 CEST.
    assert.equal(berlin.micros('2020-03-29 02:30:00'), utc('2020-03-29T01:30:00'));
    assert.equal(berlin.micros('2020-03-29 03:30:00'), utc('2020-03-29T01:30:00'));
    assert.equal(berlin.micros('2020-03-29 01:59:59'), utc('2020-03-29T00:59:59'));
  });

  it('gives the same answers from its cache of steady hours as without it', () => {
    const first = zonedTimes('Australia/Lord_Howe'); // half-hour changes
    const texts = ['2021-04-04 01:45:00', '2021-04-04 01:15:00', '2021-10-03 02:15:00', '2021-06-01 08:00:00', '2021-06-01 08:59:59'];
    const again = texts.map((text) => first.micros(text));
    assert.deepEqual(
      texts.map((text) => zonedTimes('Australia/Lord_Howe').micros(text)),
      again,
    );
    assert.equal(first.micros('2021-06-01 08:00:00'), utc('2021-05-31T21:30:00')); // +10:30 in winter
  });

  it('refuses what is not a wall-clock time', () => {
    const times = zonedTimes('UTC');
    for (const text of [
      '2019-02-30 00:00:00',
      '2019-13-01 00:00:00',
      '2019-01-01 24:00:00',
      '2019-01-01',
      'yesterday',
      '2019-01-01 00:00:00Z',
    ]) {
      assert.equal(times.micros(text), undefined, text);
    }
  });

  it('refuses a zone the time zone data lacks, naming it', () => {
    assert.throws(
      () => zonedTimes('Mars/Olympus_Mons'),
      (error: unknown) => {
        assert.ok(error instanceof UnknownTimeZone);
        assert.match(error.message, /Mars\/Olympus_Mons/);
        return true;
      },
    );
  });
});
