/**
 * The sampler and the batch span processor as OTEL_TRACES_SAMPLER* and OTEL_BSP_* set them: the
 * SDK no longer reads these itself, so a value that were not read here would be ignored.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchSettingsFrom, samplerFrom } from '../../src/tracing/sdk-settings.js';
import { TracingConfigError } from '../../src/tracing/tracing.js';
import { freePort, run, SERVER_BIN } from '../support/processes.js';

const refusal = (message: string) => (error: unknown) => error instanceof TracingConfigError && error.message === message;

describe('the sampler and the batch span processor from the OTEL_* environment', () => {
  it('samples parent-based, always on, by default, and as OTEL_TRACES_SAMPLER names', () => {
    assert.equal(samplerFrom({}).toString(), samplerFrom({ OTEL_TRACES_SAMPLER: 'parentbased_always_on' }).toString());
    assert.match(samplerFrom({}).toString(), /^ParentBased\{root=AlwaysOnSampler/);
    assert.equal(samplerFrom({ OTEL_TRACES_SAMPLER: 'always_off' }).toString(), 'AlwaysOffSampler');
    assert.equal(samplerFrom({ OTEL_TRACES_SAMPLER: ' Always_On ' }).toString(), 'AlwaysOnSampler');
    assert.equal(
      samplerFrom({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).toString(),
      'TraceIdRatioBased{0.25}',
    );
    assert.equal(samplerFrom({ OTEL_TRACES_SAMPLER: 'traceidratio' }).toString(), 'TraceIdRatioBased{1}');
    assert.match(
      samplerFrom({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }).toString(),
      /root=TraceIdRatioBased\{0\}/,
    );
    assert.match(samplerFrom({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' }).toString(), /root=AlwaysOffSampler/);
  });

  it('refuses a sampler or ratio it cannot use, naming the variable', () => {
    assert.throws(
      () => samplerFrom({ OTEL_TRACES_SAMPLER: 'jaeger_remote' }),
      refusal(
        'OTEL_TRACES_SAMPLER is "jaeger_remote": it is one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio',
      ),
    );
    for (const ratio of ['1.5', '-0.1', 'half']) {
      assert.throws(
        () => samplerFrom({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: ratio }),
        refusal(`OTEL_TRACES_SAMPLER_ARG is "${ratio}": the ratio of traces sampled is a number from 0 to 1`),
      );
    }
  });

  it("sets the batch processor's delays and sizes, and leaves the SDK's defaults for those unset", () => {
    assert.deepEqual(batchSettingsFrom({}), {});
    assert.deepEqual(
      batchSettingsFrom({
        OTEL_BSP_SCHEDULE_DELAY: '0',
        OTEL_BSP_EXPORT_TIMEOUT: '1000',
        OTEL_BSP_MAX_QUEUE_SIZE: ' 4096 ',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '256',
      }),
      { scheduledDelayMillis: 0, exportTimeoutMillis: 1000, maxQueueSize: 4096, maxExportBatchSize: 256 },
    );
  });

  it('refuses a delay or size that is not a whole number, or a size of 0', () => {
    assert.throws(
      () => batchSettingsFrom({ OTEL_BSP_SCHEDULE_DELAY: '5s' }),
      refusal('OTEL_BSP_SCHEDULE_DELAY is "5s": it is a whole number'),
    );
    assert.throws(
      () => batchSettingsFrom({ OTEL_BSP_MAX_QUEUE_SIZE: '0' }),
      refusal('OTEL_BSP_MAX_QUEUE_SIZE is "0": it is a whole number above 0'),
    );
    assert.throws(
      () => batchSettingsFrom({ OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1e3' }),
      refusal('OTEL_BSP_MAX_EXPORT_BATCH_SIZE is "1e3": it is a whole number above 0'),
    );
  });

  it('the server does not start with a sampler it cannot use, and says why', async () => {
    const result = await run(SERVER_BIN, [], {
      NOTIFICATIONS_DATABASE_URL: 'sqlite::memory:',
      NOTIFICATIONS_PORT: String(await freePort()),
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_TRACES_SAMPLER: 'xray',
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^svc-notifications: OTEL_TRACES_SAMPLER is "xray": it is one of always_on, /);
  });
});
