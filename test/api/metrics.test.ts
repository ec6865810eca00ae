/**
 * `GET /metrics` of an app built as the server builds it, on every database: events go in
 * through /receive, the policy and delivery runners are driven a round at a time (so the queue holds
 * still between scrapes), and every count is checked exactly.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import { eventmatchRoutes } from '../../src/api/eventmatch-routes.js';
import { metricsRoutes } from '../../src/api/metrics-routes.js';
import { receiveRoutes } from '../../src/api/receive-routes.js';
import { queueReader } from '../../src/db/stores/queue-stats.js';
import { createTargetClient, type TargetClient } from '../../src/delivery/target-client.js';
import { EventLogBatch } from '../../src/receive/event-log-batch.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { createMetrics, type ServiceMetrics } from '../../src/metrics/registry.js';
import { addressGuard } from '../../src/net/address-guard.js';
import type { PolicyAnswer } from '../../src/policy/policy-client.js';
import { systemClock } from '../../src/time/clock.js';
import { byOutcome, DELIVERY_OUTCOMES, POLICY_OUTCOMES, parseExposition, type Samples, sample } from '../metrics/exposition.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { type HttpStub, startStub } from '../support/http-stub.js';
import { round, testDeliveryRunner, testPolicyRunner } from '../support/runners.js';
import { defaultTargetGuard } from '../support/target-guard.js';

const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';
const POLICY: Record<string, PolicyAnswer> = {
  alice: { kind: 'allow', status: 200 },
  bob: { kind: 'deny', status: 403 },
  carol: { kind: 'allow', status: 200 },
  dave: { kind: 'retry', status: 503, error: 'policy service answered 503' },
  erin: { kind: 'allow', status: 200 },
};

for (const backend of testBackends()) {
  describeOn(backend, `GET /metrics (${backend.name})`, () => {
    let t: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    let metrics: ServiceMetrics;
    let stub: HttpStub;
    let target: TargetClient;
    /** alice's second subscription, disabled before its deliveries are tried. */
    let disabledLater = '';
    const clock = systemClock();

    before(async () => {
      t = await openTestDatabase(backend);
      stub = await startStub((request, response) => {
        response.writeHead(request.url === '/gone' ? 404 : request.url === '/busy' ? 503 : 204).end();
      });
      target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard: addressGuard({ allow: [], deny: [] }) });
      metrics = createMetrics({ queue: { reader: queueReader(t.handle.db), clock, onError: (error) => assert.fail(String(error)) } });
      const matcher = new LiveMatcher();
      app = await buildApp({ maxBodyBytes: 1024 * 1024, logger: 'silent', version: 'test' }, [
        metricsRoutes({ registry: metrics.registry }),
        eventmatchRoutes({
          database: t.handle,
          clock,
          secretKey: null,
          dialectMode: 'auto',
          userSubscriptions: 1000,
          targetGuard: defaultTargetGuard(),
          identity: { header: 'http-remote-user', defaultUser: null },
          onChange: (change) => matcher.apply(change),
        }),
        receiveRoutes({ eventLog: new EventLogBatch(t.handle), matcher, clock, receiveToken: null, onReceived: () => undefined, metrics }),
      ]);
    });
    after(async () => {
      await app.close();
      await target.close();
      await stub.close();
      await t.close();
    });

    async function scrape(): Promise<Samples> {
      const response = await app.inject({ method: 'GET', url: '/metrics' });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['content-type'], PROMETHEUS_TEXT);
      return parseExposition(response.body);
    }
    const queue = (samples: Samples, name: string) => ({
      policy: sample(samples, name, { state: 'policy' }),
      deliver: sample(samples, name, { state: 'deliver' }),
    });
    async function subscribe(user: string, type: string, path: string): Promise<string> {
      const response = await app.inject({
        method: 'POST',
        url: '/eventmatch',
        headers: { 'http-remote-user': user },
        payload: { name: `${user}'s`, jsonpath: `$[?$.type == '${type}']`, target_url: `${stub.url}${path}` },
      });
      assert.equal(response.statusCode, 200, response.body);
      return (response.json() as { uuid: string }).uuid;
    }
    const event = (id: string, type: string) => ({ specversion: '1.0', id, source: `/metrics-${backend.name}`, type });
    const receive = (body: unknown, contentType = 'application/cloudevents+json') =>
      app.inject({ method: 'POST', url: '/receive', headers: { 'content-type': contentType }, payload: JSON.stringify(body) });

    it('answers in the Prometheus text format with every series at zero, the queue empty, and the process metrics', async () => {
      const samples = await scrape();
      assert.deepEqual(byOutcome(samples, 'notifications_events_received_total', ['logged', 'duplicate']), { logged: 0, duplicate: 0 });
      assert.equal(sample(samples, 'notifications_matches_total'), 0);
      assert.deepEqual(byOutcome(samples, 'notifications_policy_answers_total', POLICY_OUTCOMES), { allowed: 0, denied: 0, retry: 0 });
      assert.deepEqual(byOutcome(samples, 'notifications_deliveries_total', DELIVERY_OUTCOMES), {
        delivered: 0,
        retry: 0,
        failed: 0,
        cancelled: 0,
      });
      assert.equal(sample(samples, 'notifications_delivery_latency_seconds_count'), 0);
      assert.deepEqual(queue(samples, 'notifications_queue_depth'), { policy: 0, deliver: 0 });
      assert.deepEqual(queue(samples, 'notifications_queue_oldest_pending_age_seconds'), { policy: 0, deliver: 0 });
      assert.ok(sample(samples, 'process_cpu_user_seconds_total')! >= 0, 'process metrics');
      assert.ok(sample(samples, 'nodejs_heap_size_used_bytes')! > 0, 'Node.js metrics');
    });

    it('counts what /receive logged, its duplicates and its matches; the queue shows the rows waiting for the policy', async () => {
      await subscribe('alice', 'a', '/ok');
      disabledLater = await subscribe('alice', 'a', '/ok');
      await subscribe('bob', 'a', '/ok');
      await subscribe('carol', 'b', '/gone');
      await subscribe('dave', 'b', '/ok');
      await subscribe('erin', 'b', '/busy');
      // e1 twice in one batch, e2 on its own and again later: 3 logged, 2 duplicates, 3 + 3 + 3 matches.
      const batch = await receive([event('e1', 'a'), event('e1', 'a'), event('e2', 'a')], 'application/cloudevents-batch+json');
      assert.equal(batch.statusCode, 200, batch.body);
      assert.equal((await receive(event('e3', 'b'))).statusCode, 200);
      assert.equal(((await receive(event('e2', 'a'))).json() as { duplicate?: boolean }).duplicate, true);
      // A rejected request counts as nothing.
      assert.equal((await receive({ id: 'no-source' })).statusCode, 400);

      const samples = await scrape();
      assert.deepEqual(byOutcome(samples, 'notifications_events_received_total', ['logged', 'duplicate']), { logged: 3, duplicate: 2 });
      assert.equal(sample(samples, 'notifications_matches_total'), 9);
      assert.deepEqual(queue(samples, 'notifications_queue_depth'), { policy: 9, deliver: 0 });
      const age = queue(samples, 'notifications_queue_oldest_pending_age_seconds');
      assert.ok(age.policy !== undefined && age.policy > 0 && age.policy < 60, `oldest policy row age ${age.policy}`);
      assert.equal(age.deliver, 0, 'nothing waits for delivery yet');
    });

    it('counts the policy answers per (event, user) and the deliveries by outcome, with their durations and latencies', async () => {
      const schedule = { delaysMs: [60_000], random: () => 0.5 };
      const policy = testPolicyRunner({ handle: t.handle, clock }, { policy: { ask: async (user) => POLICY[user]! }, schedule, metrics });
      assert.equal(await round(policy), 9);
      let samples = await scrape();
      // e1 and e2: alice allowed, bob denied; e3: carol and erin allowed, dave asked again later.
      assert.deepEqual(byOutcome(samples, 'notifications_policy_answers_total', POLICY_OUTCOMES), { allowed: 4, denied: 2, retry: 1 });
      assert.deepEqual(queue(samples, 'notifications_queue_depth'), { policy: 1, deliver: 6 });

      // Disabled behind the service's back, so the delivery runner is the one to cancel its rows.
      await t.handle.db.updateTable('subscriptions').set({ disabled: clock() }).where('uuid', '=', disabledLater).execute();
      assert.equal(await round(testDeliveryRunner({ handle: t.handle, clock }, { target, schedule, metrics })), 6);
      samples = await scrape();
      assert.deepEqual(byOutcome(samples, 'notifications_deliveries_total', DELIVERY_OUTCOMES), {
        delivered: 2,
        retry: 1,
        failed: 1,
        cancelled: 2,
      });
      assert.equal(
        sample(samples, 'notifications_delivery_duration_seconds_count'),
        4,
        'one per HTTP exchange: 2 delivered, 1 retry, 1 failed',
      );
      assert.equal(sample(samples, 'notifications_delivery_latency_seconds_count'), 2);
      const latency = sample(samples, 'notifications_delivery_latency_seconds_sum')!;
      assert.ok(latency > 0 && latency < 2 * 60, `latency sum ${latency}`);
      assert.equal(sample(samples, 'notifications_delivery_latency_seconds_bucket', { le: '+Inf' }), 2);
      // dave's row waits for the policy service, erin's for its retry.
      assert.deepEqual(queue(samples, 'notifications_queue_depth'), { policy: 1, deliver: 1 });
      const age = queue(samples, 'notifications_queue_oldest_pending_age_seconds');
      assert.ok(age.policy! > 0 && age.deliver! > 0, JSON.stringify(age));
      // The counters of /receive did not move.
      assert.equal(sample(samples, 'notifications_matches_total'), 9);
    });
  });
}
