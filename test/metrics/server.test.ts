/**
 * The built server wires the metrics: its /metrics follows an event through /receive, the
 * policy (allow-all) and delivery, on every database.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { serverOn } from '../support/server-on.js';
import { byOutcome, DELIVERY_OUTCOMES, POLICY_OUTCOMES, parseExposition, type Samples, sample } from './exposition.js';

for (const backend of testBackends()) {
  describeOn(backend, `the server's /metrics (${backend.name})`, () => {
    let hook: HttpStub;
    before(async () => {
      hook = await startStub();
    });
    const server = serverOn(backend, { NOTIFICATIONS_LOG_LEVEL: 'warn' });
    // Registered after serverOn's: runs once the server has stopped.
    after(() => hook.close());

    async function scrape(): Promise<Samples> {
      const response = await fetch(`${server.url}/metrics`);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
      return parseExposition(await response.text());
    }

    it('counts an event from /receive to its delivery, and shows the queue empty again', async () => {
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
        body: JSON.stringify({ name: 'all', jsonpath: '$.id', target_url: hook.url }),
      });
      assert.equal(created.status, 200, await created.text());
      const event = JSON.stringify({ specversion: '1.0', id: 'm-1', source: '/metrics', type: 't' });
      for (let i = 0; i < 2; i++) {
        const received = await fetch(`${server.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json' },
          body: event,
        });
        assert.equal(received.status, 200);
      }
      await eventually(
        async () => sample(await scrape(), 'notifications_deliveries_total', { outcome: 'delivered' }) === 1,
        'the delivery is counted',
      );
      const samples = await scrape();
      assert.equal(hook.requests.length, 1);
      assert.deepEqual(byOutcome(samples, 'notifications_events_received_total', ['logged', 'duplicate']), { logged: 1, duplicate: 1 });
      assert.equal(sample(samples, 'notifications_matches_total'), 1);
      assert.deepEqual(byOutcome(samples, 'notifications_policy_answers_total', POLICY_OUTCOMES), { allowed: 1, denied: 0, retry: 0 });
      assert.deepEqual(byOutcome(samples, 'notifications_deliveries_total', DELIVERY_OUTCOMES), {
        delivered: 1,
        retry: 0,
        failed: 0,
        cancelled: 0,
      });
      assert.equal(sample(samples, 'notifications_delivery_duration_seconds_count'), 1);
      assert.equal(sample(samples, 'notifications_delivery_latency_seconds_count'), 1);
      for (const state of ['policy', 'deliver']) {
        assert.equal(sample(samples, 'notifications_queue_depth', { state }), 0);
        assert.equal(sample(samples, 'notifications_queue_oldest_pending_age_seconds', { state }), 0);
      }
      assert.equal(sample(samples, 'notifications_database_up'), 1);
      assert.ok(sample(samples, 'process_start_time_seconds')! > 0);
      assert.equal(sample(samples, 'notifications_http_requests_total', { method: 'POST', route: '/eventmatch', status: '200' }), 1);
      assert.equal(sample(samples, 'notifications_http_requests_total', { method: 'POST', route: '/receive', status: '200' }), 2);
      assert.equal(sample(samples, 'notifications_http_request_duration_seconds_count', { method: 'POST', route: '/receive' }), 2);
    });
  });
}
