import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { within } from '../../src/time/within.js';

const timeUp = () => new Error('time up');

describe('within', () => {
  it('answers what the work answers, when it answers in time', async () => {
    assert.equal(await within(Promise.resolve(42), 60_000, timeUp), 42);
    await assert.rejects(within(Promise.reject(new Error('refused')), 60_000, timeUp), /refused/);
  });

  it('fails with the error of time up when the work has not answered, and the work goes on unheeded', async () => {
    let finish: (value: number) => void = () => undefined;
    let fail: (error: Error) => void = () => undefined;
    const late = new Promise<number>((resolve) => (finish = resolve));
    const lateFailure = new Promise<number>((_resolve, reject) => (fail = reject));
    await assert.rejects(within(late, 5, timeUp), /time up/);
    await assert.rejects(within(lateFailure, 5, timeUp), /time up/);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      finish(1);
      fail(new Error('failed late'));
      // Rejections are reported unhandled after the microtasks of the turn they happen in.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    assert.deepEqual(unhandled, [], 'a late failure of the work is not an unhandled rejection');
  });

  it('leaves no timer behind once the work has answered', async () => {
    const before = process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    await within(Promise.resolve('done'), 60_000, timeUp);
    const after = process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    assert.equal(after, before);
  });
});
