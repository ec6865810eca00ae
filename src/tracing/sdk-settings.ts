/**
 * The sampler and the batch span processor as the standard OTEL_TRACES_SAMPLER* and OTEL_BSP_*
 * variables set them. The SDK reads its exporter's variables and the resource's itself, but
 * since its 3.0 line no longer these: without this module they would be ignored in silence.
 * A value the service cannot use stops it at start, naming the variable.
 */
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  type BatchSpanProcessorOptions,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace';
import { TracingConfigError } from './tracing.js';

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** The sampler OTEL_TRACES_SAMPLER names (parent-based, always on, by default), with OTEL_TRACES_SAMPLER_ARG its ratio. */
export function samplerFrom(env: NodeJS.ProcessEnv): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(name)) {
    throw new TracingConfigError(`OTEL_TRACES_SAMPLER is ${JSON.stringify(name)}: it is one of ${SAMPLERS.join(', ')}`);
  }
  const root = name.endsWith('always_on')
    ? new AlwaysOnSampler()
    : name.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(ratioFrom(env));
  return name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root;
}

/** OTEL_TRACES_SAMPLER_ARG, a ratio from 0 to 1 (1 when unset). */
function ratioFrom(env: NodeJS.ProcessEnv): number {
  const text = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  if (!text) return 1;
  const ratio = Number(text);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new TracingConfigError(`OTEL_TRACES_SAMPLER_ARG is ${JSON.stringify(text)}: the ratio of traces sampled is a number from 0 to 1`);
  }
  return ratio;
}

const BATCH_SETTINGS = {
  OTEL_BSP_SCHEDULE_DELAY: 'scheduledDelayMillis',
  OTEL_BSP_EXPORT_TIMEOUT: 'exportTimeoutMillis',
  OTEL_BSP_MAX_QUEUE_SIZE: 'maxQueueSize',
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 'maxExportBatchSize',
} as const;

/** The batch span processor's delays and sizes that OTEL_BSP_* set; the SDK's defaults for those unset. */
export function batchSettingsFrom(env: NodeJS.ProcessEnv): Omit<BatchSpanProcessorOptions, 'exporter'> {
  const settings: Omit<BatchSpanProcessorOptions, 'exporter'> = {};
  for (const [variable, option] of Object.entries(BATCH_SETTINGS)) {
    const text = env[variable]?.trim();
    if (!text) continue;
    const value = /^\d+$/.test(text) ? Number(text) : undefined;
    if (value === undefined || (option !== 'scheduledDelayMillis' && value === 0)) {
      throw new TracingConfigError(
        `${variable} is ${JSON.stringify(text)}: it is a whole number${option === 'scheduledDelayMillis' ? '' : ' above 0'}`,
      );
    }
    settings[option] = value;
  }
  return settings;
}
