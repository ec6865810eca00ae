import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TargetDeniedError } from '../../src/delivery/address-guard.js';
import { ExchangeTimeoutError, TargetUrlError } from '../../src/delivery/network-error.js';
import { classifyError, classifyResponse } from '../../src/delivery/outcome.js';

const errno = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('classifyResponse', () => {
  it('2xx is delivered', () => {
    for (const status of [200, 201, 202, 204, 299]) assert.deepEqual(classifyResponse(status), { kind: 'delivered' });
  });

  it('408, 425, 429 and 5xx are retried, with the Retry-After given', () => {
    for (const status of [408, 425, 429, 500, 502, 503, 504, 599]) assert.equal(classifyResponse(status).kind, 'retry', String(status));
    assert.deepEqual(classifyResponse(429, 30_000, 'slow down'), { kind: 'retry', retryAfterMs: 30_000, reason: 'target answered 429 Too Many Requests: slow down' });
    assert.deepEqual(classifyResponse(503), { kind: 'retry', reason: 'target answered 503 Service Unavailable' });
  });

  it('other 4xx are permanent, and the reason quotes the body', () => {
    for (const status of [400, 401, 403, 404, 410, 422, 499]) assert.equal(classifyResponse(status).kind, 'permanent', String(status));
    assert.deepEqual(classifyResponse(404, undefined, 'no such hook\n'), { kind: 'permanent', reason: 'target answered 404 Not Found: no such hook' });
  });

  it('3xx is permanent: redirects are not followed', () => {
    assert.deepEqual(classifyResponse(301, undefined, 'moved'), { kind: 'permanent', reason: 'target answered 301 Moved Permanently (redirects are not followed): moved' });
    assert.equal(classifyResponse(307).kind, 'permanent');
  });

  it('a status without a class is permanent', () => {
    assert.deepEqual(classifyResponse(600), { kind: 'permanent', reason: 'target answered 600' });
  });
});

describe('classifyError', () => {
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
