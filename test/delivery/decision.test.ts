import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyNoAnswer, classifyResponse, outcomeOfResponse } from '../../src/delivery/decision.js';
import type { TargetResponse } from '../../src/delivery/target-client.js';
import { afterAttempt, ERROR_LIMIT } from '../../src/runners/after-attempt.js';
import type { RetrySchedule } from '../../src/runners/retry-schedule.js';
import { TargetDeniedError } from '../../src/net/address-guard.js';
import { describeNetworkError, ExchangeTimeoutError, TargetUrlError } from '../../src/net/network-error.js';

const errno = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('classifyResponse', () => {
  it('2xx is delivered', () => {
    for (const status of [200, 201, 202, 204, 299]) assert.deepEqual(classifyResponse(status), { kind: 'delivered' });
  });

  it('408, 425, 429 and 5xx are retried, with the Retry-After given', () => {
    for (const status of [408, 425, 429, 500, 502, 503, 504, 599]) assert.equal(classifyResponse(status).kind, 'retry', String(status));
    assert.deepEqual(classifyResponse(429, { retryAfterMs: 30_000, bodyExcerpt: 'slow down' }), {
      kind: 'retry',
      retryAfterMs: 30_000,
      reason: 'target answered 429 Too Many Requests: slow down',
    });
    assert.deepEqual(classifyResponse(503), { kind: 'retry', reason: 'target answered 503 Service Unavailable' });
  });

  it('other 4xx are permanent, and the reason quotes the body', () => {
    for (const status of [400, 401, 403, 404, 410, 422, 499]) assert.equal(classifyResponse(status).kind, 'permanent', String(status));
    assert.deepEqual(classifyResponse(404, { bodyExcerpt: 'no such hook\n' }), {
      kind: 'permanent',
      reason: 'target answered 404 Not Found: no such hook',
    });
  });

  it('3xx is permanent: redirects are not followed', () => {
    assert.deepEqual(classifyResponse(301, { bodyExcerpt: 'moved' }), {
      kind: 'permanent',
      reason: 'target answered 301 Moved Permanently (redirects are not followed): moved',
    });
    assert.equal(classifyResponse(307).kind, 'permanent');
    assert.deepEqual(classifyResponse(308, { location: 'https://elsewhere.example/hook' }), {
      kind: 'permanent',
      reason: 'target answered 308 Permanent Redirect to https://elsewhere.example/hook (redirects are not followed)',
    });
  });

  it('a status without a class is permanent', () => {
    assert.deepEqual(classifyResponse(600), { kind: 'permanent', reason: 'target answered 600' });
  });
});

/** What an error thrown instead of an answer means for the delivery. */
function classifyError(error: unknown) {
  const failure = describeNetworkError(error);
  return classifyNoAnswer(failure.message, failure.permanent);
}

describe('classifyNoAnswer, over what describeNetworkError says of an error', () => {
  it('retries time-outs and connection and DNS failures', () => {
    const cases: Array<[unknown, string]> = [
      [new ExchangeTimeoutError(10_000), 'time-out after 10000 ms'],
      [errno('ECONNREFUSED'), 'connection refused'],
      [errno('ECONNRESET'), 'connection reset'],
      [errno('UND_ERR_SOCKET', 'other side closed'), 'connection closed before the answer was complete'],
      [Object.assign(errno('ENOTFOUND'), { hostname: 'hooks.example' }), 'DNS lookup of hooks.example failed: no such name (ENOTFOUND)'],
      [errno('EAI_AGAIN'), 'DNS lookup failed: temporary DNS failure (EAI_AGAIN)'],
      [errno('CERT_HAS_EXPIRED', 'certificate has expired'), 'TLS failed: certificate has expired'],
      [new AggregateError([errno('ECONNREFUSED')]), 'connection refused'],
      [errno('EWHATEVER', 'something odd'), 'something odd (EWHATEVER)'],
    ];
    for (const [error, reason] of cases) assert.deepEqual(classifyError(error), { kind: 'retry', reason });
  });

  it('refused addresses and unusable URLs are permanent', () => {
    const denied = new TargetDeniedError('address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY');
    assert.deepEqual(classifyError(denied), { kind: 'permanent', reason: denied.message });
    assert.equal(classifyError(new TargetUrlError('ftp: is not http: or https:')).kind, 'permanent');
  });
});

/** A try that ended at `at` (µs). */
type Try = TargetResponse & { at: number };

/** What a target's answer comes to for its row: its outcome, and what after-attempt.ts makes of that. */
function decideDelivery(row: { attempts: number }, tried: Try, schedule: RetrySchedule) {
  const after = afterAttempt('deliver', [row], outcomeOfResponse(tried), tried, schedule);
  assert.ok(after.change, 'an answer always changes the row');
  return { ...after, change: after.change };
}

describe('a target answer, after the attempt', () => {
  const AT = 1_700_000_000_000_000;
  const schedule = { delaysMs: [1_000, 5_000, 30_000], random: () => 0.5 };
  const answered = (status: number, extra: Partial<Try> = {}): Try => ({
    status,
    error: null,
    permanent: false,
    durationMs: 12,
    bodyExcerpt: '',
    at: AT,
    ...extra,
  });
  const noAnswer = (error: string, permanent = false): Try => ({ status: null, error, permanent, durationMs: 30, bodyExcerpt: '', at: AT });

  it('2xx: delivered, the status kept as the target code, the try counted', () => {
    for (const status of [200, 202, 204]) {
      assert.deepEqual(decideDelivery({ attempts: 0 }, answered(status), schedule), {
        change: { state: 'delivered', targetCode: status, attempts: 'count' },
        attempt: { at: AT, status, error: null, durationMs: 12 },
        result: 'delivered',
      });
    }
  });

  it('5xx, 408, 425, 429: due again after the next delay of the schedule', () => {
    for (const [attempts, delay] of [
      [0, 1_000],
      [1, 5_000],
      [2, 30_000],
    ] as const) {
      for (const status of [500, 503, 408, 425, 429]) {
        const decision = decideDelivery({ attempts }, answered(status), schedule);
        assert.deepEqual(
          decision.change,
          { state: 'deliver', due: AT + delay * 1000, targetCode: status, attempts: 'count' },
          `${status} after ${attempts}`,
        );
        assert.equal(decision.result, 'retry');
        assert.equal(decision.disable, undefined);
      }
    }
  });

  it('the jitter spreads the delay by 20 % either way', () => {
    const early = decideDelivery({ attempts: 0 }, answered(503), { ...schedule, random: () => 0 });
    const late = decideDelivery({ attempts: 0 }, answered(503), { ...schedule, random: () => 0.999_999 });
    assert.equal(early.change.due, AT + 800_000);
    assert.equal(late.change.due, AT + 1_200_000);
  });

  it('Retry-After asks for later: honoured; for sooner: the schedule wins', () => {
    assert.equal(decideDelivery({ attempts: 0 }, answered(429, { retryAfterMs: 120_000 }), schedule).change.due, AT + 120_000_000);
    assert.equal(decideDelivery({ attempts: 0 }, answered(503, { retryAfterMs: 10 }), schedule).change.due, AT + 1_000_000);
  });

  it('no answer (refused, time-out): retried, and the last HTTP status is left as it was', () => {
    for (const error of ['connection refused', 'time-out after 10000 ms']) {
      const decision = decideDelivery({ attempts: 1 }, noAnswer(error), schedule);
      assert.deepEqual(decision.change, { state: 'deliver', due: AT + 5_000_000, targetCode: undefined, attempts: 'count' });
      assert.deepEqual(decision.attempt, { at: AT, status: null, error, durationMs: 30 });
    }
  });

  it('the last retry failing: the delivery fails and the subscription is disabled, saying how many tries', () => {
    const decision = decideDelivery({ attempts: 3 }, answered(503, { bodyExcerpt: 'down for maintenance' }), schedule);
    assert.deepEqual(decision.change, { state: 'failed', targetCode: 503, attempts: 'count' });
    assert.equal(decision.result, 'failed');
    assert.equal(decision.disable, 'gave up after 4 attempts: target answered 503 Service Unavailable: down for maintenance');
    const silent = decideDelivery({ attempts: 3 }, noAnswer('connection refused'), schedule);
    assert.equal(silent.disable, 'gave up after 4 attempts: connection refused');
  });

  it('410 Gone and other 4xx: failed at once, the subscription disabled naming the status', () => {
    for (const [status, phrase] of [
      [410, 'Gone'],
      [404, 'Not Found'],
      [400, 'Bad Request'],
      [401, 'Unauthorized'],
    ] as const) {
      const decision = decideDelivery({ attempts: 0 }, answered(status), schedule);
      assert.deepEqual(decision.change, { state: 'failed', targetCode: status, attempts: 'count' });
      assert.equal(decision.disable, `target answered ${status} ${phrase}`);
    }
  });

  it('a redirect is not followed: failed at once', () => {
    const decision = decideDelivery({ attempts: 0 }, answered(302, { bodyExcerpt: 'see elsewhere' }), schedule);
    assert.equal(decision.change.state, 'failed');
    assert.equal(decision.disable, 'target answered 302 Found (redirects are not followed): see elsewhere');
  });

  it('a refused address: failed at once, without a target code', () => {
    const decision = decideDelivery(
      { attempts: 0 },
      noAnswer('address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY', true),
      schedule,
    );
    assert.deepEqual(decision.change, { state: 'failed', targetCode: undefined, attempts: 'count' });
    assert.equal(decision.disable, 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY');
  });

  it("keeps at most 1 KiB of what the target said for the subscription's error", () => {
    const decision = decideDelivery({ attempts: 0 }, answered(404, { bodyExcerpt: 'x'.repeat(5_000) }), schedule);
    assert.equal(decision.disable?.length, ERROR_LIMIT);
  });
});
