/**
 * A real HTTP server on 127.0.0.1 standing in for a target or the policy service: it records
 * every request and answers as the test says.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export type StubAnswer = (request: StubRequest, response: ServerResponse) => void | Promise<void>;

export interface HttpStub {
  readonly url: string;
  readonly requests: StubRequest[];
  /** Changes how later requests are answered. */
  answer(with_: StubAnswer): void;
  close(): Promise<void>;
}

export const reply =
  (status: number, body = '', headers: Record<string, string> = {}): StubAnswer =>
  (_request, response) => {
    response.writeHead(status, headers).end(body);
  };

export async function startStub(initial: StubAnswer = reply(200)): Promise<HttpStub> {
  let answer = initial;
  const requests: StubRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(request);
      void Promise.resolve(answer(request, res)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    answer: (with_) => (answer = with_),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Waits until `check` holds, polling; fails with `what` after `timeoutMs`. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for: ${what}`);
}
