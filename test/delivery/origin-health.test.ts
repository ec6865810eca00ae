import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DOWN_AFTER,
  KEEPING_UP_ANSWER_MS,
  KEEPING_UP_US,
  MAX_WINDOW_FACTOR,
  OriginHealth,
  PROBE_EVERY_US,
  QUICK_ANSWER_MS,
} from '../../src/delivery/origin-health.js';

const O = 'http://127.0.0.1:8080';
const T = 1_800_000_000_000_000;

describe('origin health', () => {
  it("an origin not heard from yet gets its connections' worth; quick answers widen that, up to eight times", () => {
    const health = new OriginHealth(4);
    assert.equal(health.window(O), 4);
    health.answered(O, 5, T);
    assert.equal(health.window(O), 5);
    for (let i = 0; i < 100; i++) health.answered(O, 5, T);
    assert.equal(health.window(O), 4 * MAX_WINDOW_FACTOR);
    assert.equal(health.allowance(O, 7, T), 7, 'an origin that is up may use all its free slots');
  });

  it('a slow answer, or none, narrows the window back to the connections', () => {
    const health = new OriginHealth(4);
    for (let i = 0; i < 10; i++) health.answered(O, 5, T);
    health.answered(O, QUICK_ANSWER_MS, T);
    assert.equal(health.window(O), 4);
    for (let i = 0; i < 10; i++) health.answered(O, 5, T);
    health.noAnswer(O, T);
    assert.equal(health.window(O), 4);
    assert.equal(health.isDown(O), false, 'one failure is not down');
  });

  it(`${DOWN_AFTER} tries in a row without an answer: down, probed once a second, one at a time`, () => {
    const health = new OriginHealth(4);
    for (let i = 0; i < DOWN_AFTER; i++) health.noAnswer(O, T);
    assert.equal(health.isDown(O), true);
    assert.deepEqual(health.downOrigins(), [O]);
    assert.equal(health.window(O), 1);
    assert.equal(health.allowance(O, 1, T), 0, 'not within the second');
    assert.equal(health.allowance(O, 1, T + PROBE_EVERY_US), 1, 'a probe a second on');
    assert.equal(health.allowance(O, 1, T + PROBE_EVERY_US), 0, 'and only one');
    assert.deepEqual(
      health.probesDue(T + 2 * PROBE_EVERY_US, () => false),
      [O],
      'with nothing waiting, it asks for a row to probe with',
    );
    assert.deepEqual(
      health.probesDue(T + 2 * PROBE_EVERY_US, () => true),
      [],
    );
  });

  it('any answer ends it: the origin is up again', () => {
    const health = new OriginHealth(4);
    for (let i = 0; i < DOWN_AFTER; i++) health.noAnswer(O, T);
    health.answered(O, 5, T);
    assert.equal(health.isDown(O), false);
    assert.equal(health.window(O), 5);
    health.forget(O);
    assert.deepEqual(health.known(), []);
  });

  it('keeping up: its last answer was fast and recent, and it is not failing', () => {
    const health = new OriginHealth(4);
    assert.equal(health.keepingUp(O, T), false, 'not heard from yet');
    health.answered(O, KEEPING_UP_ANSWER_MS, T);
    assert.equal(health.keepingUp(O, T + KEEPING_UP_US), true);
    assert.equal(health.keepingUp(O, T + KEEPING_UP_US + 1), false, 'nothing heard for too long: it may be hanging');
    health.answered(O, KEEPING_UP_ANSWER_MS + 1, T + 1);
    assert.equal(health.keepingUp(O, T + 1), false, 'an answer quick enough to widen the window, slower than keeping up allows');
    assert.equal(health.window(O), 6);
    health.answered(O, 5, T + 2);
    health.noAnswer(O, T + 3);
    assert.equal(health.keepingUp(O, T + 3), false, 'no answer');
  });
});
