/**
 * HTTP/1.1 spoken byte for byte over node:net, for requests an HTTP client would refuse to
 * send (a wrong Content-Length, a bad percent-escape, no HTTP at all), and the check that an
 * error answer has our shape.
 */
import assert from 'node:assert/strict';
import { STATUS_CODES } from 'node:http';
import { connect } from 'node:net';
import { ERRORS, type ErrorCode } from '../../src/errors.js';

export interface RawResponse {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends `request` as it is on a new connection and reads every response until the server
 * closes the connection (request() asks it to). `end`: close the sending side after the
 * request, e.g. to cut a body short; Node then drops answers not yet written.
 */
export function exchange(port: number, request: string | Buffer, { end = false, timeoutMs = 10_000 } = {}): Promise<RawResponse[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(request);
      if (end) socket.end();
    });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no end of the exchange in ${timeoutMs} ms; read so far: ${Buffer.concat(chunks).toString('latin1')}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A server that destroys the connection after answering may reset it: what arrived counts.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve(parseResponses(Buffer.concat(chunks)));
      } catch (error) {
        reject(error as Error);
      }
    });
  });
}

/** The only answer to `request`; fails when there is not exactly one. */
export async function exchangeOne(port: number, request: string | Buffer, options: { end?: boolean } = {}): Promise<RawResponse> {
  const responses = await exchange(port, request, options);
  assert.equal(responses.length, 1, `one answer expected, got ${JSON.stringify(responses)}`);
  return responses[0]!;
}

function parseResponses(bytes: Buffer): RawResponse[] {
  const responses: RawResponse[] = [];
  let at = 0;
  while (at < bytes.length) {
    const end = bytes.indexOf('\r\n\r\n', at);
    assert.ok(end >= 0, `incomplete response head: ${bytes.subarray(at).toString('latin1')}`);
    const [statusLine = '', ...lines] = bytes.subarray(at, end).toString('latin1').split('\r\n');
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1];
    assert.ok(status, `not a status line: ${statusLine}`);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length']);
    assert.ok(Number.isInteger(length), `every answer here has a Content-Length: ${statusLine} ${JSON.stringify(headers)}`);
    responses.push({ status: Number(status), headers, body: bytes.subarray(end + 4, end + 4 + length).toString('utf8') });
    at = end + 4 + length;
  }
  return responses;
}

/**
 * `{"statusCode": status, "error": <its reason phrase>, "code": "…", "message": "…"}`, as JSON, and
 * nothing else; the code one of the catalogue's of that status (`code`, when given).
 */
export function assertErrorShape(response: RawResponse, status: number, message?: RegExp, code?: ErrorCode): string {
  assert.equal(response.status, status, response.body);
  assert.match(response.headers['content-type'] ?? '', /^application\/json/);
  const body = JSON.parse(response.body) as Record<string, unknown>;
  // JSONPATH_SYNTAX says where reading the expression stopped, as a number too.
  const members =
    body.code === 'JSONPATH_SYNTAX' ? ['statusCode', 'error', 'code', 'message', 'position'] : ['statusCode', 'error', 'code', 'message'];
  assert.deepEqual(Object.keys(body), members, response.body);
  if (body.code === 'JSONPATH_SYNTAX') assert.ok(Number.isInteger(body.position), response.body);
  assert.equal(body.statusCode, status);
  assert.equal(body.error, STATUS_CODES[status]);
  assert.ok(Object.hasOwn(ERRORS, body.code as string), `${String(body.code)} is in the catalogue`);
  assert.equal(ERRORS[body.code as ErrorCode].status, status, `${String(body.code)} is a ${status}`);
  if (code) assert.equal(body.code, code, response.body);
  assert.equal(typeof body.message, 'string');
  assert.notEqual(body.message, '');
  if (message) assert.match(body.message as string, message);
  return body.message as string;
}

/**
 * A request with the given head lines and body, Content-Length set from the body unless given,
 * and `Connection: close`, so that the server closes the connection once it has answered.
 */
export function request(method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Buffer {
  const bytes = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const all: Record<string, string> = { host: 'localhost', connection: 'close', ...headers };
  if (bytes !== undefined && all['content-length'] === undefined && all['transfer-encoding'] === undefined)
    all['content-length'] = String(bytes.length);
  const head = `${method} ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), bytes ?? Buffer.alloc(0)]);
}

/** Sends one raw request to the port `port()` names when called (set once the app listens). */
export function rawSender(port: () => number) {
  return (method: string, path: string, headers: Record<string, string>, body?: string | Buffer) =>
    exchangeOne(port(), request(method, path, headers, body));
}
