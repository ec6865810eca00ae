import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startWorkerLoop } from '../../src/routing/worker-loop.js';

describe('worker loop', () => {
  it('keeps taking while there is work, then waits until woken', async () => {
    let queue = 3;
    let steps = 0;
    const loop = startWorkerLoop({
      step: async () => {
        steps++;
        if (queue === 0) return 0;
        queue--;
        return 1;
      },
      idleMs: 60_000,
      maxErrorPauseMs: 60_000,
      onError: (error) => assert.fail(String(error)),
    });
    await sleep(30);
    assert.equal(queue, 0);
    assert.equal(steps, 4, 'three batches, then one empty look before waiting');
    queue = 2;
    loop.wake();
    await sleep(30);
    assert.equal(queue, 0, 'woken early, it took the new work');
    await loop.stop();
  });

  it('pauses longer after each failure instead of spinning', async () => {
    let calls = 0;
    const errors: unknown[] = [];
    const loop = startWorkerLoop({
      step: async () => {
        calls++;
        throw new Error('database unreachable');
      },
      idleMs: 10,
      maxErrorPauseMs: 1_000,
      onError: (error) => errors.push(error),
    });
    await sleep(200);
    await loop.stop();
    // 10, 20, 40, 80 ms pauses: about five calls in 200 ms, not thousands.
    assert.ok(calls >= 3 && calls <= 7, `${calls} calls`);
    assert.equal(errors.length, calls);
  });

  it('stop waits for the step in flight', async () => {
    let finished = false;
    const loop = startWorkerLoop({
      step: async () => {
        await sleep(50);
        finished = true;
        return 0;
      },
      idleMs: 60_000,
      maxErrorPauseMs: 60_000,
      onError: () => undefined,
    });
    await sleep(10);
    await loop.stop();
    assert.equal(finished, true);
  });
});

describe('worker loop, woken while a step runs', () => {
  it('does not pause after that step: the work may have come too late for it', async () => {
    let steps = 0;
    let release: () => void = () => undefined;
    const loop = startWorkerLoop({
      step: async () => {
        steps++;
        if (steps === 1) await new Promise<void>((resolve) => (release = resolve));
        return 0;
      },
      idleMs: 60_000,
      maxErrorPauseMs: 60_000,
      onError: (error) => assert.fail(String(error)),
    });
    await sleep(10);
    loop.wake();
    release();
    await sleep(30);
    assert.equal(steps, 2, 'a second step at once, not after the minute of idling');
    await loop.stop();
  });
});
