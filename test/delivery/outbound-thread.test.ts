import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startOutboundThread } from '../../src/delivery/outbound-thread.js';
import { startStubServer } from './stub-server.js';

const TARGET = { timeoutMs: 2_000, connectionsPerOrigin: 4, rules: { allow: [], deny: [] } };

describe('deliveries and policy calls from a worker thread', { timeout: 20_000 }, () => {
  it('posts to targets and asks the policy service, many at once, each answered with its own result', async (t) => {
    const target = await startStubServer((request, response) => response.writeHead(request.url === '/gone' ? 410 : 204).end());
    const policy = await startStubServer((request, response) => response.writeHead(request.url.endsWith('/mallory') ? 403 : 200).end());
    t.after(() => Promise.all([target.close(), policy.close()]));
    const outbound = startOutboundThread({ target: TARGET, policy: { baseUrl: policy.origin, timeoutMs: 2_000 } }, (error) =>
      assert.fail(error),
    );
    try {
      const posts = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          outbound.target.post({
            url: `${target.origin}/${i === 7 ? 'gone' : 'hook'}`,
            auth: { type: 'basic', basic: { username: 'u', password: 'p' } },
            body: `{"n":${i}}`,
          }),
        ),
      );
      assert.deepEqual(
        posts.map((p) => p.status),
        posts.map((_, i) => (i === 7 ? 410 : 204)),
      );
      assert.equal(target.received.length, 50);
      assert.deepEqual(
        target.received.map((r) => JSON.parse(r.body).n).sort((a, b) => a - b),
        Array.from({ length: 50 }, (_, i) => i),
      );
      assert.equal(target.received[0]?.headers.authorization, `Basic ${Buffer.from('u:p').toString('base64')}`);

      const answers = await Promise.all([outbound.policy!.ask('alice', '{"id":"e-1"}'), outbound.policy!.ask('mallory', '{"id":"e-1"}')]);
      assert.deepEqual(answers, [
        { kind: 'allow', status: 200 },
        { kind: 'deny', status: 403 },
      ]);
      assert.deepEqual(JSON.parse(policy.received[0]!.body), { id: 'e-1' });
    } finally {
      await outbound.close();
    }
    // Closed: nothing more is sent, and nothing waits forever.
    const after = await outbound.target.post({ url: `${target.origin}/hook`, auth: {}, body: '{}' });
    assert.equal(after.status, null);
    assert.match(after.error ?? '', /closed/);
    assert.equal(target.received.length, 50);
  });

  it('judges target addresses in the worker by the configured rules', async (t) => {
    const target = await startStubServer((_request, response) => response.writeHead(204).end());
    t.after(() => target.close());
    const outbound = startOutboundThread({ target: { ...TARGET, rules: { allow: [], deny: ['127.0.0.0/8'] } } }, (error) =>
      assert.fail(error),
    );
    try {
      const answer = await outbound.target.post({ url: `${target.origin}/hook`, auth: {}, body: '{}' });
      assert.equal(answer.permanent, true);
      assert.match(answer.error ?? '', /denied by NOTIFICATIONS_TARGET_DENY/);
      assert.equal(outbound.policy, undefined);
      assert.equal(target.received.length, 0);
    } finally {
      await outbound.close();
    }
  });

  it('reports a worker that fails, once, and answers what was waiting as not sent', async () => {
    const reports: Error[] = [];
    let reportFailure: () => void = () => undefined;
    const reported = new Promise<void>((resolve) => (reportFailure = resolve));
    // An unusable policy URL makes the worker throw as it starts.
    const outbound = startOutboundThread({ target: TARGET, policy: { baseUrl: 'not a url', timeoutMs: 2_000 } }, (error) => {
      reports.push(error);
      reportFailure();
    });
    const answer = await outbound.target.post({ url: 'http://127.0.0.1:9/hook', auth: {}, body: '{}' });
    assert.equal(answer.status, null);
    assert.match(answer.error ?? '', /the outbound HTTP thread (failed|exited)/);
    await reported;
    assert.match(reports[0]!.message, /the outbound HTTP thread (failed|exited)/);
    // What is asked once the failure is known is answered at once, not left waiting for a dead thread.
    const later = await outbound.target.post({ url: 'http://127.0.0.1:9/hook', auth: {}, body: '{}' });
    assert.match(later.error ?? '', /the outbound HTTP thread (failed|exited)/);
    // Closing waits for the thread's end (its 'exit' follows the 'error'); the exit is not
    // reported as a second failure.
    await outbound.close();
    assert.equal(reports.length, 1);
    const closed = await outbound.target.post({ url: 'http://127.0.0.1:9/hook', auth: {}, body: '{}' });
    assert.match(closed.error ?? '', /the outbound HTTP thread (failed|exited)/);
  });
});
