import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClaimPacer } from '../../src/runners/claim-pacer.js';

describe('claim pacer', () => {
  it('waits quietMs after a claim that found nothing, and not at all after one that found work', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    assert.equal(pacer.mayClaim(), true);
    pacer.claimed(0, 10);
    now += 99;
    assert.equal(pacer.mayClaim(), false);
    now += 1;
    assert.equal(pacer.mayClaim(), true);
    pacer.claimed(5, 10);
    assert.equal(pacer.mayClaim(), true, 'there may be more');
  });

  it('lets a stage busy with handed work claim every busyMs, whatever the last claim found', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    assert.equal(pacer.mayClaimBesides(), true, 'never claimed yet');
    pacer.claimed(7, 7);
    now += 999;
    assert.equal(pacer.mayClaimBesides(), false);
    now += 1;
    assert.equal(pacer.mayClaimBesides(), true);
    pacer.claimed(0, 7);
    assert.equal(pacer.mayClaimBesides(), false);
  });
});

describe('claim pacer, with work left out', () => {
  it('claims at once when a claim made now would take in a lane the last one left out, whatever the pacing', () => {
    const now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    pacer.claimed(0, 10, new Set(['slow', 'down']));
    assert.equal(pacer.mayClaim(new Set(['slow', 'down'])), false, 'quiet: the claim found nothing, and the same lanes would be left out');
    assert.equal(pacer.mayClaim(new Set(['down'])), true, 'the slow lane has room');
    assert.equal(pacer.mayClaimBesides(new Set(['down'])), true);
    assert.equal(pacer.mayClaimBesides(new Set(['slow', 'down'])), false, 'it had room for a moment, and is full again');
    assert.equal(pacer.mayClaimOverflowing(new Set(['down'])), true);
  });

  it('after a claim that filled lanes, waits quietMs before one that would leave them out, whatever it found', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    pacer.claimed(10, 10, new Set(['down']));
    assert.equal(pacer.mayClaim(new Set(['down'])), true, 'it found all it asked for: there may be more');
    assert.equal(pacer.mayClaimOverflowing(new Set(['down'])), true);
    const filled = new Set(['down', 'a', 'b']);
    assert.equal(pacer.mayClaim(filled), false, 'the lanes it filled would be left out: it may find nothing past their rows');
    assert.equal(pacer.mayClaimOverflowing(filled), false);
    now += 100;
    assert.equal(pacer.mayClaim(filled), true, 'other lanes’ rows may have come since');
    assert.equal(pacer.mayClaimOverflowing(filled), true);
  });
});

describe('claim pacer, with the handoff overflowing', () => {
  it('claims at once, unless the last claim left lanes out and found less than it asked: then once one has room, or after quietMs', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    const full = new Set(['full']);
    assert.equal(pacer.mayClaimOverflowing(), true, 'never claimed yet');
    pacer.claimed(0, 10);
    assert.equal(pacer.mayClaimOverflowing(), true, 'it left nothing out: the overflowed rows are claimed at once');
    pacer.claimed(2, 10, full);
    assert.equal(pacer.mayClaimOverflowing(full), false, 'what it did not leave out was all there was');
    assert.equal(pacer.mayClaimOverflowing(), true, 'the lane it left out has room');
    now += 100;
    assert.equal(pacer.mayClaimOverflowing(full), true, 'rows of other lanes may have come since');
  });
});

describe('claim pacer, finding nothing with lanes left out', () => {
  it('waits twice as long after each such claim, up to busyMs, and quietMs again once one finds work or leaves nothing out', () => {
    let now = 0;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    const full = new Set(['a', 'b']);
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      pacer.claimed(0, 10, full);
      const from = now;
      while (!pacer.mayClaim(full)) now += 10;
      waits.push(now - from);
      assert.equal(pacer.mayClaimOverflowing(full), true, 'paced alike while the handoff overflows');
    }
    assert.deepEqual(waits, [100, 200, 400, 800, 1_000, 1_000]);
    assert.equal(pacer.mayClaim(new Set(['a'])), true, 'a lane it left out has room: at once');
    pacer.claimed(0, 10);
    now += 99;
    assert.equal(pacer.mayClaim(), false);
    now += 1;
    assert.equal(pacer.mayClaim(), true, 'it left nothing out: quietMs');
    pacer.claimed(0, 10, full);
    now += 100;
    assert.equal(pacer.mayClaim(full), true, 'counted afresh');
  });
});
