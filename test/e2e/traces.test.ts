/**
 * Traces, end to end: the built server as a process, exporting to a real OTLP/HTTP receiver
 * (test/support/otlp-receiver.ts decodes what the exporter sends, JSON or protobuf), with a
 * policy service and a target as real HTTP servers, on every database.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, type HttpStub, reply, startStub, type StubRequest } from '../support/http-stub.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const REFUSE_SDK = fileURLToPath(new URL('../support/refuse-tracing-sdk.js', import.meta.url));
const SPAN_KIND = { client: 3, consumer: 5 };
const STATUS_ERROR = 2;
const OWNERS = ['alice', 'bob'];

interface Setup {
  database: TestDatabase;
  receiver: OtlpReceiver;
  policy: HttpStub;
  target: HttpStub;
}

/** A database with its schema, an OTLP receiver, a policy service that allows all, a target that answers 204. */
async function setUp(create: () => Promise<TestDatabase>): Promise<Setup> {
  const database = await syncedDatabase(create);
  return { database, receiver: await startOtlpReceiver(), policy: await startStub(reply(200)), target: await startStub(reply(204)) };
}

async function tearDown(setup: Setup): Promise<void> {
  await Promise.all([setup.receiver.close(), setup.policy.close(), setup.target.close()]);
  await setup.database.cleanup();
}

/** The server, tracing to the receiver (unless `env` says otherwise), asking the policy stub. */
function startTraced(setup: Setup, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<RunningServer> {
  return startServer(
    {
      NOTIFICATIONS_DATABASE_URL: setup.database.url,
      NOTIFICATIONS_POLICY_URL: setup.policy.url,
      NOTIFICATIONS_RETRY_DELAYS: '200ms',
      NOTIFICATIONS_LOG_LEVEL: 'warn',
      OTEL_EXPORTER_OTLP_ENDPOINT: setup.receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_SERVICE_NAME: 'notifications-under-test',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=t0ken',
      ...env,
    },
    { nodeArgs },
  );
}

/** A subscription of each of OWNERS to events from `source`, delivered to the target. */
async function subscribeAll(server: RunningServer, source: string, target: string): Promise<void> {
  for (const user of OWNERS) {
    const response = await fetch(`${server.url}/eventmatch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'http-remote-user': user },
      body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: `${target}/hook` }),
    });
    assert.equal(response.status, 200, await response.text());
  }
}

async function send(server: RunningServer, event: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${server.url}/receive`, {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify({ specversion: '1.0', type: 'org.example.traced', ...event }),
  });
  assert.equal(response.status, 200, await response.text());
}

/** The receive span of the event with this id, once exported. */
async function receiveSpanOf(receiver: OtlpReceiver, id: string): Promise<ReceivedSpan> {
  await eventually(() => receiver.spans.some((s) => isReceiveOf(s, id)), `the receive span of ${id} exported`);
  return receiver.spans.find((s) => isReceiveOf(s, id))!;
}

function isReceiveOf(span: ReceivedSpan, id: string): boolean {
  return span.name === 'receive' && span.attributes['cloudevents.event_id'] === id;
}

function childrenOf(receiver: OtlpReceiver, parent: ReceivedSpan, name: string): ReceivedSpan[] {
  return receiver.spans.filter((s) => s.name === name && s.traceId === parent.traceId && s.parentSpanId === parent.spanId);
}

/** The requests of an event (by its CloudEvents id) that reached the target. */
function deliveriesOf(target: HttpStub, id: string): StubRequest[] {
  return target.requests.filter((r) => (JSON.parse(r.body) as { id: string }).id === id);
}

function traceparentOf(span: ReceivedSpan): string {
  return `00-${span.traceId}-${span.spanId}-01`;
}

for (const backend of testBackends()) {
  describeOn(backend, `traces (${backend.name})`, () => {
    for (const protocol of ['http/json', 'http/protobuf']) {
      it(`exports a receive span per event, with a child per policy call and per delivery attempt (${protocol})`, async () => {
        const setup = await setUp(backend.create);
        const server = await startTraced(setup, { OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
        try {
          await subscribeAll(server, '/traced', setup.target.url);
          await send(server, { id: 'traced-1', source: '/traced' });
          await eventually(() => deliveriesOf(setup.target, 'traced-1').length === OWNERS.length, 'both deliveries made');
          const receive = await receiveSpanOf(setup.receiver, 'traced-1');
          await eventually(
            () => childrenOf(setup.receiver, receive, 'deliver').length === OWNERS.length,
            'the delivery spans exported, as children of the receive span',
          );

          const expectedType = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
          for (const request of setup.receiver.requests) {
            assert.deepEqual(
              [request.path, request.contentType.startsWith(expectedType), request.headers['x-collector-token']],
              ['/v1/traces', true, 't0ken'],
              'exported to OTEL_EXPORTER_OTLP_ENDPOINT, with OTEL_EXPORTER_OTLP_HEADERS',
            );
          }
          assert.equal(receive.parentSpanId, '', 'an event without a traceparent extension starts a trace');
          assert.equal(receive.kind, SPAN_KIND.consumer);
          assert.equal(receive.resource['service.name'], 'notifications-under-test', 'OTEL_SERVICE_NAME names the service');
          assert.deepEqual(
            [
              receive.attributes['cloudevents.event_source'],
              receive.attributes['notifications.matches'],
              receive.attributes['notifications.duplicate'],
            ],
            ['/traced', OWNERS.length, false],
          );

          const policyCalls = childrenOf(setup.receiver, receive, 'policy');
          assert.deepEqual(policyCalls.map((s) => s.attributes['notifications.owner']).sort(), OWNERS, 'one policy call per owner');
          for (const call of policyCalls) {
            assert.equal(call.kind, SPAN_KIND.client);
            assert.equal(call.attributes['notifications.policy.answer'], 'allow');
            assert.equal(call.attributes['http.response.status_code'], 200);
            const asked = setup.policy.requests.find((r) => r.url === `/events/${call.attributes['notifications.owner'] as string}`);
            assert.equal(asked?.headers.traceparent, traceparentOf(call), 'the policy service is asked under the policy span');
          }

          const attempts = childrenOf(setup.receiver, receive, 'deliver');
          assert.deepEqual(attempts.map((s) => s.attributes['notifications.owner']).sort(), OWNERS);
          for (const attempt of attempts) {
            assert.equal(attempt.kind, SPAN_KIND.client);
            assert.deepEqual(
              [
                attempt.attributes['notifications.outcome'],
                attempt.attributes['http.response.status_code'],
                attempt.attributes['notifications.attempt'],
              ],
              ['accepted', 204, 1],
            );
          }
          // Each delivery carries the traceparent of its own attempt's span.
          assert.deepEqual(
            deliveriesOf(setup.target, 'traced-1')
              .map((r) => r.headers.traceparent)
              .sort(),
            attempts.map(traceparentOf).sort(),
          );
        } finally {
          assert.equal(await server.stop(), 0);
          await tearDown(setup);
        }
      });
    }

    it("continues the trace of an event's traceparent extension", async () => {
      const setup = await setUp(backend.create);
      // The traces' own endpoint, in full, wins over the base one.
      const server = await startTraced(setup, {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9/unused',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${setup.receiver.url}/collector/traces`,
      });
      try {
        await subscribeAll(server, '/continued', setup.target.url);
        const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
        const producerSpan = '00f067aa0ba902b7';
        await send(server, {
          id: 'continued-1',
          source: '/continued',
          traceparent: `00-${traceId}-${producerSpan}-01`,
          tracestate: 'producer=1',
        });
        const receive = await receiveSpanOf(setup.receiver, 'continued-1');
        assert.deepEqual([receive.traceId, receive.parentSpanId, receive.traceState], [traceId, producerSpan, 'producer=1']);
        await eventually(() => deliveriesOf(setup.target, 'continued-1').length === OWNERS.length, 'both deliveries made');
        await eventually(() => childrenOf(setup.receiver, receive, 'deliver').length === OWNERS.length, 'the delivery spans exported');
        const attempts = childrenOf(setup.receiver, receive, 'deliver').map(traceparentOf);
        for (const request of deliveriesOf(setup.target, 'continued-1')) {
          assert.match(String(request.headers.traceparent), new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
          assert.ok(attempts.includes(String(request.headers.traceparent)), 'sent under its attempt span');
          // The event itself is delivered as it came, its extension untouched.
          assert.equal((JSON.parse(request.body) as { traceparent: string }).traceparent, `00-${traceId}-${producerSpan}-01`);
        }

        assert.ok(setup.receiver.requests.every((r) => r.path === '/collector/traces'));

        // A malformed extension is the producer's business: that event starts a trace of its own.
        await send(server, { id: 'continued-2', source: '/continued', traceparent: 'not a traceparent' });
        const own = await receiveSpanOf(setup.receiver, 'continued-2');
        assert.equal(own.parentSpanId, '');
        assert.notEqual(own.traceId, traceId);
      } finally {
        assert.equal(await server.stop(), 0);
        await tearDown(setup);
      }
    });

    it('traces a later attempt, claimed from the database, in the same trace', async () => {
      const setup = await setUp(backend.create);
      // The first delivery of each event is answered 503: it is retried, claimed from the queue.
      const seen = new Set<string>();
      setup.target.answer((request, response) => {
        const first = !seen.has(request.headers['webhook-id'] as string);
        seen.add(request.headers['webhook-id'] as string);
        response.writeHead(first ? 503 : 204).end();
      });
      const server = await startTraced(setup);
      const db = openDatabase(setup.database.url);
      try {
        await subscribeAll(server, '/retried', setup.target.url);
        await send(server, { id: 'retried-1', source: '/retried' });
        await eventually(() => deliveriesOf(setup.target, 'retried-1').length === 2 * OWNERS.length, 'each delivery tried twice');
        const receive = await receiveSpanOf(setup.receiver, 'retried-1');
        await eventually(() => childrenOf(setup.receiver, receive, 'deliver').length === 2 * OWNERS.length, 'every attempt exported');

        const stored = await db.db.selectFrom('events').select('traceparent').where('event_id', '=', 'retried-1').executeTakeFirstOrThrow();
        assert.equal(stored.traceparent, traceparentOf(receive), 'the receive span is stored with its event');
        const attempts = childrenOf(setup.receiver, receive, 'deliver');
        for (const owner of OWNERS) {
          const own = attempts.filter((s) => s.attributes['notifications.owner'] === owner);
          const byAttempt = own.sort(
            (a, b) => (a.attributes['notifications.attempt'] as number) - (b.attributes['notifications.attempt'] as number),
          );
          assert.deepEqual(
            byAttempt.map((s) => [
              s.attributes['notifications.attempt'],
              s.attributes['notifications.outcome'],
              s.attributes['http.response.status_code'],
            ]),
            [
              [1, 'later', 503],
              [2, 'accepted', 204],
            ],
          );
          assert.equal(byAttempt[0]!.status.code, STATUS_ERROR, 'a failed attempt is an error span');
          assert.match(byAttempt[0]!.status.message, /503/);
        }
        for (const request of deliveriesOf(setup.target, 'retried-1')) {
          assert.ok(
            attempts.some((s) => request.headers.traceparent === traceparentOf(s)),
            'each try carries its own attempt span',
          );
        }
      } finally {
        await db.close();
        assert.equal(await server.stop(), 0);
        await tearDown(setup);
      }
    });

    it('exports the spans still waiting when it stops (SIGTERM)', async () => {
      const setup = await setUp(backend.create);
      // Far longer than the test: only the shutdown exports them.
      const server = await startTraced(setup, { OTEL_BSP_SCHEDULE_DELAY: '600000' });
      try {
        await subscribeAll(server, '/flushed', setup.target.url);
        await send(server, { id: 'flushed-1', source: '/flushed' });
        await eventually(() => deliveriesOf(setup.target, 'flushed-1').length === OWNERS.length, 'both deliveries made');
        assert.equal(setup.receiver.spans.length, 0, 'nothing exported before the schedule says so');
      } finally {
        assert.equal(await server.stop('SIGTERM'), 0);
      }
      try {
        const receive = setup.receiver.spans.find((s) => isReceiveOf(s, 'flushed-1'));
        assert.ok(receive, `the receive span was exported at the shutdown:\n${server.logs()}`);
        assert.equal(childrenOf(setup.receiver, receive, 'policy').length, OWNERS.length);
        assert.equal(childrenOf(setup.receiver, receive, 'deliver').length, OWNERS.length);
      } finally {
        await tearDown(setup);
      }
    });

    it('exports nothing and loads no SDK when no endpoint is set', async () => {
      const setup = await setUp(backend.create);
      // Every other OTEL_* variable set, the endpoint not: tracing stays off.
      const env = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
      const server = await startTraced(setup, env, ['--import', REFUSE_SDK]);
      const db = openDatabase(setup.database.url);
      try {
        await subscribeAll(server, '/untraced', setup.target.url);
        await send(server, {
          id: 'untraced-1',
          source: '/untraced',
          traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        });
        await eventually(() => deliveriesOf(setup.target, 'untraced-1').length === OWNERS.length, 'both deliveries made');
        assert.deepEqual(
          deliveriesOf(setup.target, 'untraced-1').map((r) => r.headers.traceparent),
          [undefined, undefined],
        );
        assert.deepEqual(
          setup.policy.requests.map((r) => r.headers.traceparent),
          [undefined, undefined],
        );
        const stored = await db.db
          .selectFrom('events')
          .select('traceparent')
          .where('event_id', '=', 'untraced-1')
          .executeTakeFirstOrThrow();
        assert.equal(stored.traceparent, null);
      } finally {
        await db.close();
        assert.equal(await server.stop(), 0);
      }
      try {
        assert.deepEqual(setup.receiver.requests, [], 'nothing was exported');
        // The guard bites: with an endpoint, the same server cannot start without the SDK.
        await assert.rejects(
          startTraced(setup, {}, ['--import', REFUSE_SDK]),
          /refused to load .*tracing\/otlp\.js: the tracing SDK must not be loaded here/,
        );
      } finally {
        await tearDown(setup);
      }
    });
  });
}
