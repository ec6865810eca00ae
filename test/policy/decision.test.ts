import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { outcomeOfAnswer } from '../../src/policy/decision.js';
import type { PolicyAnswer } from '../../src/policy/policy-client.js';
import { afterAttempt, type Tried } from '../../src/runners/after-attempt.js';
import type { RetrySchedule } from '../../src/runners/retry-schedule.js';

/** What the policy's answer comes to for the rows it covers. */
function decidePolicy(rows: Array<{ attempts: number }>, answer: PolicyAnswer, asked: Tried, schedule: RetrySchedule) {
  const after = afterAttempt('policy', rows, outcomeOfAnswer(answer), asked, schedule);
  assert.ok(after.change, 'an answer always changes the rows');
  return { ...after, change: after.change };
}

describe('a policy answer, after the attempt', () => {
  const asked = { at: 1_700_000_000_000_000, durationMs: 8 };
  const schedule = { delaysMs: [1_000, 5_000], random: () => 0.5 };

  it('allowed: on to delivery, due already (in its place), its tries counted afresh, the policy status kept', () => {
    assert.deepEqual(decidePolicy([{ attempts: 2 }], { kind: 'allow', status: 204 }, asked, schedule), {
      change: { state: 'deliver', policyCode: 204, attempts: 'reset' },
      result: 'allowed',
    });
  });

  it('denied: recorded with the status, never delivered, no attempt', () => {
    assert.deepEqual(decidePolicy([{ attempts: 0 }], { kind: 'deny', status: 403 }, asked, schedule), {
      change: { state: 'denied', policyCode: 403 },
      result: 'denied',
    });
  });

  it('no decision: asked again after the next delay, the try recorded', () => {
    const decision = decidePolicy(
      [{ attempts: 0 }, { attempts: 0 }],
      { kind: 'retry', status: 503, error: 'policy service answered 503' },
      asked,
      schedule,
    );
    assert.deepEqual(decision, {
      change: { state: 'policy', due: asked.at + 1_000_000, attempts: 'count' },
      attempt: { at: asked.at, status: 503, error: 'policy service answered 503', durationMs: 8 },
      result: 'retry',
    });
  });

  it('never gives up: past the end of the schedule its last delay repeats', () => {
    const answer = { kind: 'retry' as const, status: null, error: 'connection refused' };
    assert.equal(decidePolicy([{ attempts: 1 }], answer, asked, schedule).change.due, asked.at + 5_000_000);
    assert.equal(decidePolicy([{ attempts: 40 }], answer, asked, schedule).change.due, asked.at + 5_000_000);
    assert.equal(decidePolicy([{ attempts: 40 }], answer, asked, schedule).change.state, 'policy');
  });
});
