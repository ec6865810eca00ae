import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { batchPerTurn } from '../src/turn-batch.js';

describe('batchPerTurn', () => {
  it('hands on the items of one turn together, at its end', async () => {
    const flushed: number[][] = [];
    const add = batchPerTurn<number>((items) => void flushed.push(items));
    add(1);
    add(2);
    assert.deepEqual(flushed, []);
    await nextTurn();
    add(3);
    await nextTurn();
    assert.deepEqual(flushed, [[1, 2], [3]]);
  });

  it('with every lane busy, items wait, and the lane that frees takes them at once, maxBatch at a time', async () => {
    const flushed: number[][] = [];
    let finish: () => void = () => undefined;
    const add = batchPerTurn<number>(
      (items) => {
        flushed.push(items);
        return new Promise<void>((resolve) => (finish = resolve));
      },
      { lanes: 1, maxBatch: 2 },
    );
    add(1);
    await nextTurn();
    add(2);
    add(3);
    add(4);
    await nextTurn();
    assert.deepEqual(flushed, [[1]], 'the only lane is busy');
    finish();
    await nextTurn();
    assert.deepEqual(flushed, [[1], [2, 3]]);
    finish();
    await nextTurn();
    assert.deepEqual(flushed, [[1], [2, 3], [4]]);
    finish();
  });

  it('without a lane limit, a batch still in flight holds back nothing', async () => {
    const flushed: number[][] = [];
    const add = batchPerTurn<number>((items) => {
      flushed.push(items);
      return new Promise<void>(() => undefined);
    });
    add(1);
    await nextTurn();
    add(2);
    await nextTurn();
    assert.deepEqual(flushed, [[1], [2]]);
  });
});
