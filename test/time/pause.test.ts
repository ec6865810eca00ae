import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Pause } from '../../src/time/pause.js';

describe('Pause', () => {
  it('resolves after its time when nothing ends it', async () => {
    const pause = new Pause();
    const started = performance.now();
    await pause.for(30);
    assert.ok(performance.now() - started >= 25);
    assert.equal(pause.end(), false, 'a finished wait is not under way');
  });

  it('end() resolves the wait under way at once, and says whether there was one', async () => {
    const pause = new Pause();
    assert.equal(pause.end(), false);
    const started = performance.now();
    const waiting = pause.for(60_000);
    assert.equal(pause.end(), true);
    await waiting;
    // Far short of the 60 s it would otherwise wait: the bound holds on a loaded machine too.
    assert.ok(performance.now() - started < 10_000);
    assert.equal(pause.end(), false);
  });
});
