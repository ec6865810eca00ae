/**
 * The tracing section's collector: an OTLP/HTTP receiver that answers every export at once and
 * does nothing with it while the load runs (the bodies are kept, not decoded, so that the
 * machine's CPU goes to the service). Afterwards it counts the spans it was sent.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { spanCount } from '../test/support/otlp-receiver.js';

export interface OtlpSink {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  readonly url: string;
  /** Export requests answered so far. */
  exports(): number;
  /** Bytes of export bodies received so far. */
  bytes(): number;
  /** Decodes what was received and counts the spans (then lets the bodies go). */
  spans(): number;
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let bodies: Array<{ body: Buffer; contentType: string }> = [];
  let bytes = 0;
  let exports = 0;
  let spans = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = request.headers['content-type'] ?? '';
      bodies.push({ body, contentType });
      bytes += body.length;
      exports++;
      if (contentType.startsWith('application/json')) response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports: () => exports,
    bytes: () => bytes,
    spans: () => {
      for (const { body, contentType } of bodies) spans += spanCount(body, contentType);
      bodies = [];
      return spans;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
