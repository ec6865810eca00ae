/**
 * A real OAuth 2.0 token endpoint and a target that requires its tokens, on 127.0.0.1, for the
 * oauth2 tests. The endpoint checks the client's HTTP Basic authentication (form-encoded id and
 * secret, RFC 6749 section 2.3.1) and the client credentials form, counts requests, and issues
 * `token-1`, `token-2`… with the expires_in it is told; or refuses, as it is told. The target
 * answers 204 to a Bearer token the endpoint issued and has not revoked, 401 to anything else.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TokenEndpoint {
  readonly url: string;
  /** The forms of every request, valid or not. */
  readonly forms: URLSearchParams[];
  /** How many tokens it issued. */
  issued(): number;
  /** The latest token issued. */
  latest(): string | undefined;
  /** expires_in of the next tokens (seconds); undefined: left out. */
  expiresIn: number | undefined;
  /** Answer the next requests with this status and OAuth error instead of a token; null: issue tokens. */
  refusal: { status: number; error: string; description: string } | null;
  /** Tokens the target no longer takes. */
  readonly revoked: Set<string>;
  close(): Promise<void>;
}

export interface TokenTarget {
  readonly url: string;
  /** The Authorization headers of every request. */
  readonly authorizations: Array<string | undefined>;
  /** How many requests it answered 204. */
  accepted(): number;
  close(): Promise<void>;
}

export async function startTokenEndpoint(client: { id: string; secret: string }): Promise<TokenEndpoint> {
  let count = 0;
  const endpoint: Omit<TokenEndpoint, 'url' | 'close'> = {
    forms: [],
    issued: () => count,
    latest: () => (count === 0 ? undefined : `token-${count}`),
    expiresIn: 3600,
    refusal: null,
    revoked: new Set(),
  };
  const expected = `Basic ${Buffer.from(`${formEncoded(client.id)}:${formEncoded(client.secret)}`).toString('base64')}`;
  const server = createServer((request, response) => {
    void readBody(request).then((body) => {
      const form = new URLSearchParams(body);
      endpoint.forms.push(form);
      const json = (status: number, value: object) =>
        response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(value));
      if (request.method !== 'POST' || request.headers['content-type'] !== 'application/x-www-form-urlencoded')
        return json(400, { error: 'invalid_request', error_description: 'a form POST is expected' });
      if (request.headers.authorization !== expected)
        return json(401, { error: 'invalid_client', error_description: 'client authentication failed' });
      if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
      if (endpoint.refusal !== null)
        return json(endpoint.refusal.status, { error: endpoint.refusal.error, error_description: endpoint.refusal.description });
      count++;
      return json(200, {
        access_token: `token-${count}`,
        token_type: 'Bearer',
        ...(endpoint.expiresIn === undefined ? {} : { expires_in: endpoint.expiresIn }),
      });
    });
  });
  const url = await listen(server);
  return Object.assign(endpoint, { url: `${url}/oauth/token`, close: () => closeServer(server) });
}

/** A target taking the tokens `endpoint` issued and has not revoked. */
export async function startTokenTarget(endpoint: TokenEndpoint): Promise<TokenTarget> {
  let accepted = 0;
  const authorizations: Array<string | undefined> = [];
  const server = createServer((request, response) => {
    void readBody(request).then(() => {
      const authorization = request.headers.authorization;
      authorizations.push(authorization);
      const token = authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : '';
      const issued = /^token-(\d+)$/.exec(token);
      if (issued === null || Number(issued[1]) > endpoint.issued() || endpoint.revoked.has(token)) {
        response.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
        return;
      }
      accepted++;
      response.writeHead(204).end();
    });
  });
  const url = await listen(server);
  return { url: `${url}/hook`, authorizations, accepted: () => accepted, close: () => closeServer(server) };
}

function formEncoded(value: string): string {
  return new URLSearchParams([['', value]]).toString().slice(1);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
