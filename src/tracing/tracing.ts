/**
 * Traces: what the stages report of each event's way through the service, as OpenTelemetry
 * spans. A `receive` span for each event received, and as its children a span for each policy
 * call (one per owner asked) and for each delivery attempt. The stages depend on this small
 * interface only; the OpenTelemetry SDK behind it (otlp.ts) is loaded only when an OTLP endpoint
 * is configured, so that without one tracing costs a check for `undefined` and nothing else.
 *
 * The receive span's context is stored with the event (its `traceparent`), not kept in memory:
 * rows claimed from the database later (retries, after a restart, by another instance) find
 * their trace the same way as rows handed over in memory.
 */

/** Attribute values as OpenTelemetry takes them. */
export type SpanAttributes = Record<string, string | number | boolean>;

export interface TraceSpan {
  /** This span as a W3C `traceparent`: what the next hop continues. */
  readonly traceparent: string;
  /** Ends it, adding `attributes`; with `error`, its status is an error with that message. */
  end(attributes?: SpanAttributes, error?: string): void;
}

export interface Tracing {
  /**
   * The span of receiving one event: a child of the span the event's CloudEvents `traceparent`
   * extension names (distributed tracing extension) when it carries a valid one, with its
   * `tracestate`; otherwise the root of a new trace.
   */
  receive(extension: { traceparent: unknown; tracestate: unknown }, attributes: SpanAttributes): TraceSpan;
  /** A policy call about an event received under `receive` (its receive span's traceparent, as stored). */
  policyCall(receive: string | null | undefined, attributes: SpanAttributes): TraceSpan;
  /** One delivery attempt of an event received under `receive`. */
  deliveryAttempt(receive: string | null | undefined, attributes: SpanAttributes): TraceSpan;
  /** Exports the spans still waiting, then exports no more: the last step of a shutdown. Never rejects. */
  shutdown(): Promise<void>;
}

/** What the SDK reports of its own trouble (an export that failed). */
export type TracingWarning = (message: string) => void;

export interface TracingOptions {
  /** The `service.name` and `service.version` of the spans, unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise. */
  service: { name: string; version: string };
  warn: TracingWarning;
}

/** The protocols of OTEL_EXPORTER_OTLP_PROTOCOL this service exports with (OTLP over HTTP). */
export const TRACE_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type TraceProtocol = (typeof TRACE_PROTOCOLS)[number];

export class TracingConfigError extends Error {}

/**
 * Tracing as the standard OpenTelemetry environment variables configure it, or undefined when
 * they set no OTLP endpoint (or OTEL_SDK_DISABLED is true, or OTEL_TRACES_EXPORTER none): then
 * the SDK is not even loaded.
 * The rest (headers, time-outs, the batch processor's delays, the sampler, the resource) are read
 * by otlp.ts and the SDK. Throws TracingConfigError for a value the service cannot use.
 */
export async function startTracing(env: NodeJS.ProcessEnv, options: TracingOptions): Promise<Tracing | undefined> {
  const protocol = traceProtocol(env);
  if (protocol === undefined) return undefined;
  const { otlpTracing } = await import('./otlp.js');
  return otlpTracing(protocol, env, options);
}

/** The protocol to export with, or undefined when no spans are to be exported. */
export function traceProtocol(env: NodeJS.ProcessEnv): TraceProtocol | undefined {
  if (!present(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) && !present(env.OTEL_EXPORTER_OTLP_ENDPOINT)) return undefined;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return undefined;
  const [name, value] = present(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
    ? ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL]
    : ['OTEL_EXPORTER_OTLP_PROTOCOL', env.OTEL_EXPORTER_OTLP_PROTOCOL];
  // The specification's default for SDKs.
  const protocol = value?.trim() || 'http/protobuf';
  if (!(TRACE_PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new TracingConfigError(`${name} is ${JSON.stringify(protocol)}: spans are exported with ${TRACE_PROTOCOLS.join(' or ')}`);
  }
  return protocol as TraceProtocol;
}

function present(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}
