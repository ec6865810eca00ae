/**
 * A real OTLP/HTTP trace receiver on 127.0.0.1, standing in for a collector: it decodes what an
 * exporter sends to /v1/traces, as JSON (http/json) or protobuf (http/protobuf, decoded by
 * protobufjs from the OTLP schema below), and keeps the spans. It answers 200 with an empty
 * ExportTraceServiceResponse, as a collector does.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';

export type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  traceState: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** OTLP's StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  /** The resource's attributes (service.name…). */
  resource: Record<string, AttributeValue>;
}

export interface ExportRequestSeen {
  path: string;
  contentType: string;
  headers: IncomingHttpHeaders;
}

export interface OtlpReceiver {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to: the exporter adds /v1/traces. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Each export request's path, content type and headers. */
  readonly requests: ExportRequestSeen[];
  close(): Promise<void>;
}

/** The part of opentelemetry-proto's trace service that the tests read (unknown fields are skipped). */
const OTLP_TRACE_PROTO = `
syntax = "proto3";
package opentelemetry.proto;
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
}
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; }
message Status { string message = 2; int32 code = 3; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  Status status = 15;
}
message ScopeSpans { repeated Span spans = 2; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
`;
const requestType = protobuf.parse(OTLP_TRACE_PROTO).root.lookupType('opentelemetry.proto.ExportTraceServiceRequest');

/** OTLP's message as both encodings come to here: protobufjs's object (bytes as base64) or the JSON mapping. */
interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{ spans?: WireSpan[] }>;
  }>;
}
interface KeyValue {
  key: string;
  value?: { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number };
}
interface WireSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  name: string;
  kind?: number;
  attributes?: KeyValue[];
  status?: { code?: number; message?: string };
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: ExportRequestSeen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const contentType = req.headers['content-type'] ?? '';
      requests.push({ path: req.url ?? '', contentType, headers: req.headers });
      const body = Buffer.concat(chunks);
      try {
        const protobufBody = contentType.startsWith('application/x-protobuf');
        spans.push(...spansOf(protobufBody ? decodeProtobuf(body) : (JSON.parse(body.toString('utf8')) as ExportRequest), protobufBody));
      } catch (error) {
        res.writeHead(400).end(String(error));
        return;
      }
      if (contentType.startsWith('application/json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** How many spans an export request's body holds, by its content type (the benchmark's sink counts them after its load). */
export function spanCount(body: Buffer, contentType: string): number {
  const protobufBody = contentType.startsWith('application/x-protobuf');
  return spansOf(protobufBody ? decodeProtobuf(body) : (JSON.parse(body.toString('utf8')) as ExportRequest), protobufBody).length;
}

function decodeProtobuf(body: Buffer): ExportRequest {
  return requestType.toObject(requestType.decode(body), { longs: String, bytes: String, enums: Number, defaults: false }) as ExportRequest;
}

/** Ids are hex in OTLP's JSON, bytes (here base64) in protobuf. */
function spansOf(request: ExportRequest, protobufBody: boolean): ReceivedSpan[] {
  const id = (value: string | undefined) =>
    value === undefined ? '' : protobufBody ? Buffer.from(value, 'base64').toString('hex') : value;
  return (request.resourceSpans ?? []).flatMap(({ resource, scopeSpans }) =>
    (scopeSpans ?? []).flatMap(({ spans }) =>
      (spans ?? []).map((span) => ({
        traceId: id(span.traceId),
        spanId: id(span.spanId),
        parentSpanId: id(span.parentSpanId),
        traceState: span.traceState ?? '',
        name: span.name,
        kind: span.kind ?? 0,
        attributes: attributesOf(span.attributes),
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
        resource: attributesOf(resource?.attributes),
      })),
    ),
  );
}

function attributesOf(list: KeyValue[] | undefined): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const { key, value = {} } of list ?? []) {
    const { stringValue, boolValue, intValue, doubleValue } = value;
    const found = stringValue ?? boolValue ?? (intValue === undefined ? doubleValue : Number(intValue));
    if (found !== undefined) attributes[key] = found;
  }
  return attributes;
}
