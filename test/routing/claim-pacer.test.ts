import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClaimPacer } from '../../src/routing/claim-pacer.js';

describe('claim pacer', () => {
  it('waits quietMs after a claim that found nothing, and not at all after one that found work', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    assert.equal(pacer.mayClaim(), true);
    pacer.claimed(0);
    now += 99;
    assert.equal(pacer.mayClaim(), false);
    now += 1;
    assert.equal(pacer.mayClaim(), true);
    pacer.claimed(5);
    assert.equal(pacer.mayClaim(), true, 'there may be more');
  });

  it('lets a stage busy with handed work claim every busyMs, whatever the last claim found', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    assert.equal(pacer.mayClaimBesides(), true, 'never claimed yet');
    pacer.claimed(7);
    now += 999;
    assert.equal(pacer.mayClaimBesides(), false);
    now += 1;
    assert.equal(pacer.mayClaimBesides(), true);
    pacer.claimed(0);
    assert.equal(pacer.mayClaimBesides(), false);
  });
});

describe('claim pacer, with work left out', () => {
  it('claims at once when a claim made now would take in a lane the last one left out, whatever the pacing', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    pacer.claimed(0, new Set(['slow', 'down']));
    assert.equal(pacer.mayClaim(new Set(['slow', 'down'])), false, 'quiet: the claim found nothing, and the same lanes would be left out');
    assert.equal(pacer.mayClaim(new Set(['slow', 'down', 'other'])), false, 'a lane that was not left out changes nothing');
    assert.equal(pacer.mayClaim(new Set(['down'])), true, 'the slow lane has room');
    assert.equal(pacer.mayClaimBesides(new Set(['down'])), true);
    assert.equal(pacer.mayClaimBesides(new Set(['slow', 'down'])), false, 'it had room for a moment, and is full again');
    pacer.claimed(3);
    now += 1;
    assert.equal(pacer.mayClaimBesides(), false, 'nothing was left out by the last claim');
  });
});

describe('claim pacer, with the handoff overflowing', () => {
  it('claims at once, unless the last claim left lanes out and found less than it asked: then once one has room, or after quietMs', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    const full = new Set(['full']);
    assert.equal(pacer.mayClaimOverflowing(), true, 'never claimed yet');
    pacer.claimed(0);
    assert.equal(pacer.mayClaimOverflowing(full), true, 'it left nothing out: the overflowed rows are claimed at once');
    pacer.claimed(2, full);
    assert.equal(pacer.mayClaimOverflowing(full), false, 'what it did not leave out was all there was');
    assert.equal(pacer.mayClaimOverflowing(), true, 'the lane it left out has room');
    pacer.claimed(0, full);
    now += 99;
    assert.equal(pacer.mayClaimOverflowing(full), false);
    now += 1;
    assert.equal(pacer.mayClaimOverflowing(full), true, 'rows of other lanes may have come since');
  });
});
