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
  it('claims at once when a lane left out has room again, whatever the pacing', () => {
    let now = 1_000;
    const pacer = new ClaimPacer(100, 1_000, () => now);
    pacer.claimed(0, new Set(['slow']));
    assert.equal(pacer.mayClaim(), false, 'quiet: the claim found nothing');
    pacer.roomAgain('other');
    assert.equal(pacer.mayClaim(), false, 'a lane that was not left out changes nothing');
    pacer.roomAgain('slow');
    assert.equal(pacer.mayClaim(), true);
    assert.equal(pacer.mayClaimBesides(), true);
    pacer.claimed(3);
    now += 1;
    pacer.roomAgain('slow');
    assert.equal(pacer.mayClaimBesides(), false, 'nothing was left out by the last claim');
  });
});
