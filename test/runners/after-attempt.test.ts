import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { afterAttempt, settlementOf } from '../../src/runners/after-attempt.js';

const AT = 1_700_000_000_000_000;
const tried = { at: AT, durationMs: 7 };
const schedule = { delaysMs: [1_000, 5_000], random: () => 0.5 };
/** Rows as a stage takes them: in its own state (a delivery's allowance recorded). */
const rows = (stage: 'policy' | 'deliver', ...uuids: string[]) => uuids.map((uuid) => ({ uuid, state: stage, policy_code: null }));

describe('afterAttempt', () => {
  it('untried, at either stage: no change and no attempt, the rows go back to the queue in their place', () => {
    for (const stage of ['policy', 'deliver'] as const) {
      const after = afterAttempt(stage, [{ attempts: 1 }], { kind: 'untried' }, tried, schedule);
      assert.deepEqual(after, { result: 'untried' });
      assert.deepEqual(settlementOf(stage, rows(stage, 'a', 'b'), after), { changes: [], attempts: [], disable: [], release: ['a', 'b'] });
    }
  });

  it('cancelled, at either stage: cancelled, no attempt recorded, nothing disabled', () => {
    for (const stage of ['policy', 'deliver'] as const) {
      const after = afterAttempt(stage, [{ attempts: 0 }], { kind: 'cancelled' }, tried, schedule);
      assert.deepEqual(after, { change: { state: 'cancelled' }, result: 'cancelled' });
      assert.deepEqual(settlementOf(stage, rows(stage, 'a'), after, { uuid: 's', at: AT, tell: true }), {
        changes: [{ uuid: 'a', change: { state: 'cancelled' } }],
        attempts: [],
        disable: [],
        runs: [],
      });
    }
  });

  it('a delivery failing for good: the settlement records the attempt and disables the subscription', () => {
    const after = afterAttempt(
      'deliver',
      [{ attempts: 0 }],
      { kind: 'permanent', status: 410, error: null, reason: 'target answered 410 Gone' },
      tried,
      schedule,
    );
    assert.equal(after.result, 'failed');
    assert.deepEqual(settlementOf('deliver', rows('deliver', 'a'), after, { uuid: 's', at: AT, tell: true }), {
      changes: [{ uuid: 'a', change: { state: 'failed', targetCode: 410, attempts: 'count' } }],
      attempts: [{ matchUuid: 'a', stage: 'deliver', at: AT, status: 410, error: null, durationMs: 7 }],
      disable: [{ subscription: 's', reason: 'target answered 410 Gone', at: AT, tell: true }],
      runs: [{ subscription: 's', failed: true, error: 'target answered 410 Gone' }],
    });
  });

  it("deliveries count into their subscription's run of failures: a success ends it, a retry adds to it", () => {
    const delivered = afterAttempt('deliver', [{ attempts: 0 }], { kind: 'accepted', status: 204 }, tried, schedule);
    assert.deepEqual(settlementOf('deliver', rows('deliver', 'a'), delivered, { uuid: 's', at: AT, tell: true }).runs, [
      { subscription: 's', failed: false, error: undefined },
    ]);
    const later = afterAttempt(
      'deliver',
      [{ attempts: 0 }],
      { kind: 'later', status: 503, error: null, reason: 'target answered 503' },
      tried,
      schedule,
    );
    assert.equal(later.result, 'retry');
    assert.deepEqual(settlementOf('deliver', rows('deliver', 'a'), later, { uuid: 's', at: AT, tell: true }).runs, [
      { subscription: 's', failed: true, error: 'target answered 503' },
    ]);
  });

  it("a delivery of the service's own event is not counted, and the disabling it causes is not told (no loops)", () => {
    const after = afterAttempt('deliver', [{ attempts: 0 }], { kind: 'refused', status: 403 }, tried, schedule);
    const settlement = settlementOf('deliver', rows('deliver', 'a'), after, { uuid: 's', at: AT, tell: false });
    assert.deepEqual(settlement.runs, []);
    assert.deepEqual(settlement.disable, [{ subscription: 's', reason: 'refused with 403', at: AT, tell: false }]);
  });

  it('the policy stage counts no runs', () => {
    const after = afterAttempt('policy', [{ attempts: 0 }], { kind: 'later', status: 503, error: 'x', reason: 'x' }, tried, schedule);
    assert.deepEqual(settlementOf('policy', rows('policy', 'a'), after, { uuid: 's', at: AT, tell: true }).runs, []);
  });

  it('a delivery refused: failed at once, the subscription disabled', () => {
    const after = afterAttempt('deliver', [{ attempts: 0 }], { kind: 'refused', status: 403 }, tried, schedule);
    assert.equal(after.result, 'failed');
    assert.equal(after.disable, 'refused with 403');
  });

  it('the policy stage never gives up: a permanent failure is asked again, nothing disabled', () => {
    const after = afterAttempt(
      'policy',
      [{ attempts: 30 }, { attempts: 2 }],
      { kind: 'permanent', status: null, error: 'bad policy URL', reason: 'bad policy URL' },
      tried,
      schedule,
    );
    assert.deepEqual(after.change, { state: 'policy', due: AT + 5_000_000, attempts: 'count' });
    assert.equal(after.disable, undefined);
    assert.deepEqual(settlementOf('policy', rows('policy', 'a', 'b'), after).attempts, [
      { matchUuid: 'a', stage: 'policy', at: AT, status: null, error: 'bad policy URL', durationMs: 7 },
      { matchUuid: 'b', stage: 'policy', at: AT, status: null, error: 'bad policy URL', durationMs: 7 },
    ]);
  });

  describe('a row the policy stage handed on, its allowance not written yet', () => {
    const handed = { uuid: 'h', state: 'policy' as const, policy_code: 200 };
    const claimed = { uuid: 'c', state: 'deliver' as const, policy_code: 200 };

    it('delivered: the allowance is written with the outcome, its first try counted', () => {
      const after = afterAttempt('deliver', [{ attempts: 0 }], { kind: 'accepted', status: 204 }, tried, schedule);
      assert.deepEqual(settlementOf('deliver', [handed], after, { uuid: 's', at: AT, tell: true }).changes, [
        { uuid: 'h', change: { state: 'delivered', targetCode: 204, attempts: 'first', policyCode: 200 } },
      ]);
    });

    it('retried: due later, allowed, one try counted', () => {
      const later = { kind: 'later', status: 503, error: null, reason: 'target answered 503' } as const;
      const after = afterAttempt('deliver', [{ attempts: 0 }], later, tried, schedule);
      assert.deepEqual(settlementOf('deliver', [handed], after).changes, [
        { uuid: 'h', change: { state: 'deliver', due: AT + 1_000_000, targetCode: 503, attempts: 'first', policyCode: 200 } },
      ]);
    });

    it('given back untried: allowed, waiting in its place, beside a row that is only released', () => {
      const after = afterAttempt('deliver', [{ attempts: 0 }], { kind: 'untried' }, tried, schedule);
      assert.deepEqual(settlementOf('deliver', [claimed, handed], after), {
        changes: [{ uuid: 'h', change: { state: 'deliver', policyCode: 200, attempts: 'reset' } }],
        attempts: [],
        disable: [],
        release: ['c'],
      });
    });

    it('cancelled or readable: the allowance is written too, no try counted', () => {
      for (const kind of ['cancelled', 'waiting'] as const) {
        const after = afterAttempt('deliver', [{ attempts: 0 }], { kind }, tried, schedule);
        assert.deepEqual(settlementOf('deliver', [handed], after).changes, [
          { uuid: 'h', change: { ...after.change, policyCode: 200, attempts: 'reset' } },
        ]);
      }
    });

    it('at the policy stage, a row in the policy state is only its own', () => {
      const after = afterAttempt('policy', [{ attempts: 0 }], { kind: 'untried' }, tried, schedule);
      assert.deepEqual(settlementOf('policy', [handed], after).release, ['h']);
    });
  });
});
