import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { QueueReader } from '../../src/metrics/queue-gauges.js';
import { createMetrics } from '../../src/metrics/registry.js';
import { SCRAPE_READ_TIMEOUT_MS } from '../../src/metrics/scrape-read.js';
import { byOutcome, DELIVERY_OUTCOMES, OTHER_PROCESS_COMMITS_OUTCOMES, POLICY_OUTCOMES, parseExposition, sample } from './exposition.js';

const unexpected = (error: unknown) => assert.fail(`unexpected error: ${String(error)}`);
const scrape = async (metrics: ReturnType<typeof createMetrics>) => parseExposition(await metrics.registry.metrics());

describe('metrics registry', () => {
  it('starts every outcome series at zero and counts each report exactly', async () => {
    const metrics = createMetrics();
    let samples = await scrape(metrics);
    assert.deepEqual(byOutcome(samples, 'notifications_events_received_total', ['logged', 'duplicate']), { logged: 0, duplicate: 0 });
    assert.equal(sample(samples, 'notifications_matches_total'), 0);
    assert.deepEqual(byOutcome(samples, 'notifications_policy_answers_total', POLICY_OUTCOMES), { allowed: 0, denied: 0, retry: 0 });
    assert.deepEqual(byOutcome(samples, 'notifications_deliveries_total', DELIVERY_OUTCOMES), {
      delivered: 0,
      retry: 0,
      failed: 0,
      cancelled: 0,
    });
    assert.deepEqual([sample(samples, 'notifications_events_purged_total'), sample(samples, 'notifications_matches_purged_total')], [0, 0]);
    assert.equal(sample(samples, 'notifications_match_evaluation_errors_total'), 0);
    assert.deepEqual(byOutcome(samples, 'notifications_other_process_commits_total', OTHER_PROCESS_COMMITS_OUTCOMES), {
      unchanged: 0,
      added: 0,
      reloaded: 0,
    });

    metrics.eventReceived(false);
    metrics.eventReceived(false);
    metrics.eventReceived(true);
    metrics.matched(3);
    metrics.matched(0);
    metrics.policyAnswered('allow');
    metrics.policyAnswered('deny');
    metrics.policyAnswered('deny');
    metrics.policyAnswered('retry');
    metrics.deliverySettled('delivered', 0.01, 0.5);
    metrics.deliverySettled('retry', 0.02);
    metrics.deliverySettled('failed', 0.03);
    metrics.deliverySettled('cancelled');
    metrics.eventsPurged(200, 450);
    metrics.eventsPurged(3, 0);
    metrics.matchEvaluationFailed(2);
    metrics.matchEvaluationFailed(1);
    metrics.otherProcessCommits('unchanged');
    metrics.otherProcessCommits('unchanged');
    metrics.otherProcessCommits('reloaded');
    samples = await scrape(metrics);
    assert.deepEqual(byOutcome(samples, 'notifications_events_received_total', ['logged', 'duplicate']), { logged: 2, duplicate: 1 });
    assert.equal(sample(samples, 'notifications_matches_total'), 3);
    assert.deepEqual(byOutcome(samples, 'notifications_policy_answers_total', POLICY_OUTCOMES), { allowed: 1, denied: 2, retry: 1 });
    assert.deepEqual(byOutcome(samples, 'notifications_deliveries_total', DELIVERY_OUTCOMES), {
      delivered: 1,
      retry: 1,
      failed: 1,
      cancelled: 1,
    });
    assert.equal(sample(samples, 'notifications_delivery_duration_seconds_count'), 3, 'a cancelled row had no HTTP exchange');
    assert.equal(sample(samples, 'notifications_delivery_latency_seconds_count'), 1, 'only a delivery has a latency');
    assert.deepEqual(
      [sample(samples, 'notifications_events_purged_total'), sample(samples, 'notifications_matches_purged_total')],
      [203, 450],
    );
    assert.equal(sample(samples, 'notifications_match_evaluation_errors_total'), 3);
    assert.deepEqual(byOutcome(samples, 'notifications_other_process_commits_total', OTHER_PROCESS_COMMITS_OUTCOMES), {
      unchanged: 2,
      added: 0,
      reloaded: 1,
    });
  });

  it('puts attempt durations and latencies in buckets from milliseconds to minutes and beyond', async () => {
    const metrics = createMetrics();
    metrics.deliverySettled('delivered', 0.003, 42);
    metrics.deliverySettled('delivered', 7, 2 * 3600);
    const samples = await scrape(metrics);
    const bucket = (name: string, le: string) => sample(samples, `${name}_bucket`, { le });
    assert.deepEqual(
      ['0.001', '0.0025', '0.005', '5', '10', '+Inf'].map((le) => bucket('notifications_delivery_duration_seconds', le)),
      [0, 0, 1, 1, 2, 2],
    );
    assert.deepEqual(
      ['0.005', '30', '60', '3600', '14400', '86400', '+Inf'].map((le) => bucket('notifications_delivery_latency_seconds', le)),
      [0, 0, 1, 1, 2, 2, 2],
    );
    assert.equal(sample(samples, 'notifications_delivery_latency_seconds_sum'), 42 + 7200);
  });

  it('gives each instance its own registry, with the process metrics on it', async () => {
    const one = createMetrics();
    const two = createMetrics();
    one.matched(5);
    const [a, b] = [await scrape(one), await scrape(two)];
    assert.equal(sample(a, 'notifications_matches_total'), 5);
    assert.equal(sample(b, 'notifications_matches_total'), 0);
    for (const samples of [a, b]) {
      assert.ok((sample(samples, 'process_cpu_user_seconds_total') ?? -1) >= 0, 'process CPU time');
      assert.ok((sample(samples, 'nodejs_heap_size_used_bytes') ?? 0) > 0, 'heap in use');
    }
    assert.equal(one.registry.contentType, 'text/plain; version=0.0.4; charset=utf-8');
  });

  describe('queue gauges', () => {
    const NOW = 1_800_000_000_000_000;
    const reader = (over: Partial<QueueReader> = {}): QueueReader => ({
      depth: async () =>
        new Map([
          ['policy', 4],
          ['deliver', 0],
        ]),
      oldestCreated: async () =>
        new Map([
          ['policy', NOW - 90_500_000],
          ['deliver', undefined],
        ]),
      ...over,
    });

    it('reads the depth and the oldest row at scrape time; a state with no rows is 0 old', async () => {
      let reads = 0;
      const metrics = createMetrics({
        queue: {
          reader: reader({
            depth: async () => {
              reads++;
              return new Map([
                ['policy', 4 + reads],
                ['deliver', 0],
              ]);
            },
          }),
          clock: () => NOW,
          onError: unexpected,
        },
      });
      let samples = await scrape(metrics);
      assert.deepEqual(
        [
          sample(samples, 'notifications_queue_depth', { state: 'policy' }),
          sample(samples, 'notifications_queue_depth', { state: 'deliver' }),
        ],
        [5, 0],
      );
      assert.equal(sample(samples, 'notifications_queue_oldest_pending_age_seconds', { state: 'policy' }), 90.5);
      assert.equal(sample(samples, 'notifications_queue_oldest_pending_age_seconds', { state: 'deliver' }), 0);
      samples = await scrape(metrics);
      assert.equal(sample(samples, 'notifications_queue_depth', { state: 'policy' }), 6, 'read again on every scrape');
    });

    it('never reports a negative age when a row was created by a clock ahead of ours', async () => {
      const metrics = createMetrics({
        queue: {
          reader: reader({ oldestCreated: async () => new Map([['policy', NOW + 5_000_000]]) }),
          clock: () => NOW,
          onError: unexpected,
        },
      });
      assert.equal(sample(await scrape(metrics), 'notifications_queue_oldest_pending_age_seconds', { state: 'policy' }), 0);
    });

    it('leaves the queue gauges without samples, and reports why, when the database cannot be read', async () => {
      let fail = false;
      const errors: unknown[] = [];
      const failing = async () => {
        if (fail) throw new Error('database unreachable');
        return new Map([['policy', 1]]);
      };
      const metrics = createMetrics({
        queue: { reader: { depth: failing, oldestCreated: failing }, clock: () => NOW, onError: (e) => errors.push(e) },
      });
      assert.equal(sample(await scrape(metrics), 'notifications_queue_depth', { state: 'policy' }), 1);
      fail = true;
      const samples = await scrape(metrics);
      assert.equal(sample(samples, 'notifications_queue_depth', { state: 'policy' }), undefined, 'no stale value');
      assert.equal(sample(samples, 'notifications_queue_oldest_pending_age_seconds', { state: 'policy' }), undefined);
      assert.equal(sample(samples, 'notifications_matches_total'), 0, 'the rest of the scrape is served');
      assert.deepEqual(
        errors.map((e) => (e as Error).message),
        ['database unreachable', 'database unreachable'],
      );
    });
  });

  describe('database up', () => {
    it('is 1 while the database answers the ping of each scrape, and 0 once it fails', async () => {
      let pings = 0;
      let fail = false;
      const metrics = createMetrics({
        databasePing: async () => {
          pings++;
          if (fail) throw new Error('connection refused');
        },
      });
      assert.equal(sample(await scrape(metrics), 'notifications_database_up'), 1);
      fail = true;
      const samples = await scrape(metrics);
      assert.equal(sample(samples, 'notifications_database_up'), 0);
      assert.equal(sample(samples, 'notifications_matches_total'), 0, 'the rest of the scrape is served');
      fail = false;
      assert.equal(sample(await scrape(metrics), 'notifications_database_up'), 1, 'up again as soon as it answers');
      assert.equal(pings, 3, 'asked once per scrape');
    });

    it(`is 0 when the ping gets no answer within ${SCRAPE_READ_TIMEOUT_MS} ms, without holding the scrape longer`, async () => {
      const metrics = createMetrics({ databasePing: () => new Promise(() => undefined) });
      const started = performance.now();
      const samples = await scrape(metrics);
      const elapsed = performance.now() - started;
      assert.equal(sample(samples, 'notifications_database_up'), 0);
      assert.ok(elapsed >= SCRAPE_READ_TIMEOUT_MS - 50 && elapsed < SCRAPE_READ_TIMEOUT_MS + 2_000, `answered after ${elapsed} ms`);
    });

    it('is not there without a database to ask', async () => {
      assert.equal(sample(await scrape(createMetrics()), 'notifications_database_up'), undefined);
    });
  });
});
