/**
 * Tracing with the OpenTelemetry SDK, exported over OTLP/HTTP by a batch span processor. Loaded
 * by tracing.ts only when an endpoint is configured. The SDK reads part of the OTEL_* environment
 * itself: the exporter its endpoint, headers, time-out and compression; the resource
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. The batch processor's delays and sizes
 * (OTEL_BSP_*) and the sampler (OTEL_TRACES_SAMPLER, parent-based by default, so an event whose
 * traceparent says "not sampled" is not recorded either) are read here (sdk-settings.ts).
 *
 * No context manager is installed: every span's parent is given explicitly, from the event's
 * extension or from the traceparent stored with it, so nothing follows the async hops.
 */
import {
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  diag,
  DiagLogLevel,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api';
import { parseTraceParent, W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import { batchSettingsFrom, samplerFrom } from './sdk-settings.js';
import type { SpanAttributes, TraceProtocol, TraceSpan, Tracing, TracingOptions } from './tracing.js';

const propagator = new W3CTraceContextPropagator();

export async function otlpTracing(protocol: TraceProtocol, env: NodeJS.ProcessEnv, options: TracingOptions): Promise<Tracing> {
  const sampler = samplerFrom(env);
  const batchSettings = batchSettingsFrom(env);
  // Export failures (a collector that does not answer) are the SDK's to report: through diag.
  const warn = (message: string, ...args: unknown[]) => options.warn(readable([message, ...args.map(String)].join(' ')));
  diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': options.service.name, 'service.version': options.service.version }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler,
    spanProcessors: [new BatchSpanProcessor({ ...batchSettings, exporter: await exporter(protocol) })],
  });
  const tracer = provider.getTracer(options.service.name, options.service.version);

  return {
    receive(extension, attributes) {
      const carrier: Record<string, unknown> = { traceparent: extension.traceparent, tracestate: extension.tracestate };
      // A malformed extension is the producer's business: the event starts a trace of its own.
      const parent = propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
      return started(tracer, 'receive', SpanKind.CONSUMER, parent, attributes);
    },
    policyCall: (receive, attributes) => started(tracer, 'policy', SpanKind.CLIENT, storedParent(receive), attributes),
    deliveryAttempt: (receive, attributes) => started(tracer, 'deliver', SpanKind.CLIENT, storedParent(receive), attributes),
    // A batch the exporter refuses (too many exports at once, from a large OTEL_BSP_MAX_QUEUE_SIZE)
    // rejects the flush: the spans are lost, the shutdown goes on.
    shutdown: () =>
      provider
        .shutdown()
        .catch((error: unknown) => options.warn(`spans lost at shutdown: ${error instanceof Error ? error.message : String(error)}`)),
  };
}

/** An error the SDK reports as JSON (its global error handler's way), as its message alone. */
function readable(text: string): string {
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null && 'message' in parsed && typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Not JSON: as it is.
  }
  return text;
}

async function exporter(protocol: TraceProtocol): Promise<SpanExporter> {
  // Only the exporter asked for is loaded.
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

/** The context of a receive span as stored with its event; none (a root span) for an event stored without one. */
function storedParent(traceparent: string | null | undefined): Context {
  const spanContext = traceparent ? parseTraceParent(traceparent) : null;
  return spanContext === null ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, spanContext);
}

function started(tracer: Tracer, name: string, kind: SpanKind, parent: Context, attributes: SpanAttributes): TraceSpan {
  const span = tracer.startSpan(name, { kind, attributes }, parent);
  return { traceparent: traceparentOf(span), end: (more, error) => end(span, more, error) };
}

function traceparentOf(span: Span): string {
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
  return carrier.traceparent!;
}

function end(span: Span, attributes: SpanAttributes | undefined, error: string | undefined): void {
  if (attributes !== undefined) span.setAttributes(attributes);
  if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}
