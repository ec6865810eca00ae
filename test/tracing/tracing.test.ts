/**
 * Whether and how spans are exported, as the OTEL_* environment variables say; the spans
 * themselves are tested end to end (test/e2e/traces.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startTracing, traceProtocol, TracingConfigError } from '../../src/tracing/tracing.js';
import { eventually } from '../support/http-stub.js';
import { freePort, run, SERVER_BIN } from '../support/processes.js';

const ENDPOINT = 'http://127.0.0.1:4318';

describe('tracing configuration', () => {
  it('exports only when an endpoint is set, and not when the SDK or the exporter is turned off', () => {
    assert.equal(traceProtocol({}), undefined);
    assert.equal(traceProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), undefined);
    assert.equal(traceProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }), 'http/protobuf', "the specification's default");
    assert.equal(traceProtocol({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/v1/traces` }), 'http/protobuf');
    assert.equal(traceProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: 'true' }), undefined);
    assert.equal(traceProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: 'false' }), 'http/protobuf');
    assert.equal(traceProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'none' }), undefined);
    assert.equal(traceProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp' }), 'http/protobuf');
  });

  it('exports with the protocol asked for, the traces-specific variable first', () => {
    assert.equal(traceProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), 'http/json');
    assert.equal(
      traceProtocol({
        OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      }),
      'http/protobuf',
    );
  });

  it('refuses a protocol it cannot export with, naming the variable', async () => {
    assert.throws(
      () => traceProtocol({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }),
      (error: unknown) =>
        error instanceof TracingConfigError &&
        error.message === 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is "grpc": spans are exported with http/protobuf or http/json',
    );
    await assert.rejects(
      startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http' }, { service, warn: () => {} }),
      /OTEL_EXPORTER_OTLP_PROTOCOL is "http"/,
    );
  });

  it('the server does not start with such a protocol, and says why', async () => {
    const result = await run(SERVER_BIN, [], {
      NOTIFICATIONS_DATABASE_URL: 'sqlite::memory:',
      NOTIFICATIONS_PORT: String(await freePort()),
      OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      'svc-notifications: OTEL_EXPORTER_OTLP_PROTOCOL is "grpc": spans are exported with http/protobuf or http/json\n',
    );
  });

  it('reports spans it could not export', async () => {
    // The SDK reads its endpoint from the process environment itself: nobody listens there.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${await freePort()}`;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '10';
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '1000';
    const warnings: string[] = [];
    const tracing = await startTracing(process.env, { service, warn: (message) => warnings.push(message) });
    assert.ok(tracing);
    try {
      tracing.receive({ traceparent: undefined, tracestate: undefined }, {}).end();
      await eventually(() => warnings.length > 0, 'the failed export reported', 20_000);
      assert.match(warnings.join('\n'), /^connect ECONNREFUSED 127\.0\.0\.1:\d+$/m, "the reason, not the SDK's JSON");
    } finally {
      await tracing.shutdown();
    }
  });

  it('shuts down without failing when the exporter refuses batches, and says spans were lost', async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${await freePort()}`;
    // Room for more batches than the exporter sends at once (30): the flush at shutdown sends them all together.
    process.env.OTEL_BSP_MAX_QUEUE_SIZE = '40000';
    process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
    const warnings: string[] = [];
    const tracing = await startTracing(process.env, { service, warn: (message) => warnings.push(message) });
    assert.ok(tracing);
    for (let i = 0; i < 32 * 512; i++) tracing.receive({ traceparent: undefined, tracestate: undefined }, {}).end();
    await tracing.shutdown();
    assert.ok(
      warnings.includes('spans lost at shutdown: Concurrent export limit reached'),
      `the lost spans are reported:\n${warnings.join('\n')}`,
    );
  });
});

const service = { name: 'svc-notifications', version: '0.0.0' };
