/**
 * The loop's pauses are timers: node's mock timers (setTimeout only) stand in for the clock, so
 * every assertion about idling and back-off is made at an exact moment, by advancing time, not
 * by sleeping and counting what happened meanwhile.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { startWorkerLoop } from '../../src/runners/worker-loop.js';
import { settle } from '../support/turns.js';

function mockTimers(t: TestContext): TestContext['mock']['timers'] {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  return t.mock.timers;
}

describe('worker loop', () => {
  it('keeps taking while there is work, then waits until woken, or until the next poll', async (t) => {
    const timers = mockTimers(t);
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
    await settle();
    assert.equal(queue, 0);
    assert.equal(steps, 4, 'three batches, then one empty look before waiting');
    queue = 2;
    loop.wake();
    await settle();
    assert.equal(queue, 0, 'woken early, it took the new work');
    assert.equal(steps, 7);
    timers.tick(59_999);
    await settle();
    assert.equal(steps, 7, 'idle until the poll is due');
    timers.tick(1);
    await settle();
    assert.equal(steps, 8, 'polled once the idle time has passed');
    await loop.stop();
  });

  it('pauses longer after each failure instead of spinning, up to the limit; a success ends the back-off', async (t) => {
    const timers = mockTimers(t);
    let calls = 0;
    let failing = true;
    const errors: unknown[] = [];
    const loop = startWorkerLoop({
      step: async () => {
        calls++;
        if (failing) throw new Error('database unreachable');
        return 0;
      },
      idleMs: 10,
      maxErrorPauseMs: 500,
      onError: (error) => errors.push(error),
    });
    await settle();
    assert.equal(calls, 1);
    for (const pauseMs of [20, 40, 80, 160, 320, 500, 500]) {
      timers.tick(pauseMs - 1);
      await settle();
      assert.equal(calls, errors.length, 'every failure is reported');
      const before: number = calls;
      timers.tick(1);
      await settle();
      assert.equal(calls, before + 1, `the next try comes ${pauseMs} ms after the last, not sooner or later`);
    }
    failing = false;
    timers.tick(500);
    await settle();
    const afterSuccess: number = calls;
    timers.tick(10);
    await settle();
    assert.equal(calls, afterSuccess + 1, 'after a success, the ordinary idle poll again');
    await loop.stop();
  });

  it('stop waits for the step in flight', async () => {
    let finished = false;
    let release: () => void = () => undefined;
    const loop = startWorkerLoop({
      step: async () => {
        await new Promise<void>((resolve) => (release = resolve));
        finished = true;
        return 0;
      },
      idleMs: 60_000,
      maxErrorPauseMs: 60_000,
      onError: () => undefined,
    });
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await settle();
    assert.equal(stopped, false, 'not stopped while the step runs');
    release();
    await stopping;
    assert.equal(finished, true);
  });

  it('stop ends an idle wait at once', async (t) => {
    mockTimers(t);
    let steps = 0;
    const loop = startWorkerLoop({
      step: async () => {
        steps++;
        return 0;
      },
      idleMs: 60_000,
      maxErrorPauseMs: 60_000,
      onError: () => undefined,
    });
    await settle();
    await loop.stop();
    assert.equal(steps, 1, 'no step after stop');
  });
});

describe('worker loop, woken while a step runs', () => {
  it('does not pause after that step: the work may have come too late for it', async (t) => {
    mockTimers(t);
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
    await settle();
    loop.wake();
    release();
    await settle();
    assert.equal(steps, 2, 'a second step at once, with no time passing');
    await settle();
    assert.equal(steps, 2, 'and then it idles');
    await loop.stop();
  });
});
