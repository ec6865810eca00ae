import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Lanes } from '../../src/runners/lanes.js';

describe('lanes', () => {
  it('starts, oldest first, as many of a lane as it has free slots, each lane on its own', () => {
    const lanes = new Lanes<number>((key) => (key === 'wide' ? 3 : 1));
    for (const n of [1, 2, 3, 4]) lanes.add('wide', n);
    for (const n of [5, 6]) lanes.add('narrow', n);
    assert.deepEqual(
      lanes.start().map(({ key, item }) => `${key}:${item}`),
      ['wide:1', 'wide:2', 'wide:3', 'narrow:5'],
    );
    assert.deepEqual(lanes.start(), [], 'every slot is taken');
    lanes.finished('narrow');
    assert.deepEqual(lanes.start(), [{ key: 'narrow', item: 6 }], 'the freed slot goes to its own lane');
    assert.equal(lanes.size, 5);
  });

  it('starts one lane alone when asked', () => {
    const lanes = new Lanes<number>(() => 1);
    lanes.add('a', 1);
    lanes.add('b', 2);
    assert.deepEqual(lanes.start(undefined, 'b'), [{ key: 'b', item: 2 }]);
    assert.deepEqual(lanes.start(undefined, 'nowhere'), []);
    assert.deepEqual(lanes.start(), [{ key: 'a', item: 1 }]);
  });

  it('passes over items that are not ready, which keep their place, and asks only while a slot is free', () => {
    const lanes = new Lanes<number>(() => 2);
    for (const n of [1, 2, 3, 4]) lanes.add('a', n);
    const asked: number[] = [];
    const odd = (n: number) => {
      asked.push(n);
      return n % 2 === 1;
    };
    assert.deepEqual(
      lanes.start(undefined, undefined, odd).map(({ item }) => item),
      [1, 3],
    );
    assert.deepEqual(asked, [1, 2, 3], 'the fourth is not asked: both slots were taken');
    lanes.finished('a');
    assert.deepEqual(
      lanes.start().map(({ item }) => item),
      [2],
      'the one passed over is first again',
    );
    assert.equal(lanes.size, 3);
  });

  it('starts fewer when the allowance says so', () => {
    const lanes = new Lanes<number>(() => 4);
    for (const n of [1, 2, 3]) lanes.add('down', n);
    assert.deepEqual(
      lanes.start(() => 1).map(({ item }) => item),
      [1],
    );
  });

  it('is full at twice its slots, waiting and running together', () => {
    const lanes = new Lanes<number>(() => 2);
    for (const n of [1, 2, 3]) lanes.add('a', n);
    assert.equal(lanes.isFull('a'), false);
    lanes.add('a', 4);
    assert.equal(lanes.isFull('a'), true);
    lanes.start();
    assert.equal(lanes.isFull('a'), true, 'running counts too');
    lanes.finished('a');
    assert.equal(lanes.isFull('a'), false);
    assert.deepEqual(lanes.fullKeys(), []);
  });

  it('takes out the waiting items asked for, and forgets a lane once it is empty', () => {
    const lanes = new Lanes<number>(() => 1);
    for (const n of [1, 2, 3]) lanes.add('a', n);
    lanes.start();
    assert.deepEqual(
      lanes.removeWaiting((n) => n > 1),
      [2, 3],
    );
    assert.equal(lanes.has('a'), true, 'one still running');
    lanes.finished('a');
    assert.equal(lanes.has('a'), false);
    assert.equal(lanes.size, 0);
  });
});
