/**
 * The built server delivering with `auth` oauth2 and mtls, on each database: a token fetched
 * from a real token endpoint (refusing at first: the attempt fails naming it, and the delivery
 * is retried) and a client certificate presented to an https target that requires one. Neither
 * the client secret nor the private key is ever in a record, the stored row or the log.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { after, before, it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { startTokenEndpoint, startTokenTarget, type TokenEndpoint, type TokenTarget } from '../support/oauth2-servers.js';
import { serverOn } from '../support/server-on.js';
import { makeTestPki, type TestPki } from '../support/test-pki.js';

const CLIENT = { id: 'pipeline', secret: 'e2e-client-secret-kept-hidden' };
const USER = { 'content-type': 'application/json', 'http-remote-user': 'alice' };

for (const backend of testBackends()) {
  describeOn(backend, `deliveries with oauth2 and mtls auth, end to end (${backend.name})`, () => {
    const pki: TestPki = makeTestPki();
    let endpoint: TokenEndpoint;
    let tokenTarget: TokenTarget;
    const subjects: string[] = [];
    const mtlsTarget = createServer(
      { cert: pki.serverCert, key: pki.serverKey, ca: pki.caCert, requestCert: true, rejectUnauthorized: true },
      (request, response) => {
        subjects.push((request.socket as TLSSocket).getPeerCertificate().subject.CN as string);
        request.resume().on('end', () => response.writeHead(204).end());
      },
    );
    before(async () => {
      endpoint = await startTokenEndpoint(CLIENT);
      tokenTarget = await startTokenTarget(endpoint);
      await new Promise<void>((resolve) => mtlsTarget.listen(0, '127.0.0.1', resolve));
    });
    const server = serverOn(
      backend,
      {
        NOTIFICATIONS_SECRET_KEY: randomBytes(32).toString('base64'),
        NOTIFICATIONS_RETRY_DELAYS: '200ms,200ms,200ms,200ms,200ms',
        NOTIFICATIONS_TARGET_TIMEOUT: '2s',
        NOTIFICATIONS_LEASE: '10s',
        NOTIFICATIONS_LOG_LEVEL: 'debug',
      },
      { open: true },
    );
    after(async () => {
      mtlsTarget.closeAllConnections();
      await new Promise((resolve) => mtlsTarget.close(resolve));
      await Promise.all([endpoint.close(), tokenTarget.close()]);
    });

    const subscribe = async (name: string, targetUrl: string, auth: object) => {
      const response = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: USER,
        body: JSON.stringify({ name, jsonpath: `$[?$.source == '/${name}']`, target_url: targetUrl, auth }),
      });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      return { uuid: (JSON.parse(text) as { uuid: string }).uuid, text };
    };
    const send = async (source: string, id: string) => {
      const response = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: JSON.stringify({ specversion: '1.0', id, source: `/${source}`, type: 'org.example.upload' }),
      });
      assert.equal(response.status, 200);
    };
    const matchesOf = (uuid: string) => server.db.db.selectFrom('matches').selectAll().where('subscription_uuid', '=', uuid).execute();
    const attemptsOf = async (uuid: string) => {
      const matches = await matchesOf(uuid);
      if (matches.length === 0) return [];
      return server.db.db
        .selectFrom('attempts')
        .select(['status', 'error'])
        .where(
          'match_uuid',
          'in',
          matches.map((m) => m.uuid),
        )
        .where('stage', '=', 'deliver')
        .orderBy('at')
        .execute();
    };
    const rawAuth = async (uuid: string) =>
      (await server.db.db.selectFrom('subscriptions').select('auth').where('uuid', '=', uuid).executeTakeFirstOrThrow()).auth;

    it('oauth2: a refusing token endpoint fails the attempt naming it, the retry gets a token, and later deliveries share it', async () => {
      endpoint.refusal = { status: 400, error: 'invalid_client', description: 'client is suspended' };
      const oauth2 = { token_url: endpoint.url, client_id: CLIENT.id, client_secret: CLIENT.secret, scope: 'events' };
      const { uuid, text } = await subscribe('oauth2', tokenTarget.url, { type: 'oauth2', oauth2 });
      assert.ok(!text.includes(CLIENT.secret));
      assert.ok(!(await rawAuth(uuid)).includes(CLIENT.secret), 'sealed in the row');

      await send('oauth2', 'o-1');
      const origin = new URL(endpoint.url).origin;
      const refusal = `token endpoint ${origin}/oauth/token answered 400: invalid_client (client is suspended)`;
      await eventually(
        async () => (await attemptsOf(uuid)).some((a) => a.error === refusal),
        'an attempt failed naming the token endpoint',
        10_000,
      );
      assert.equal(tokenTarget.authorizations.length, 0);
      endpoint.refusal = null;
      await eventually(
        async () => (await matchesOf(uuid)).every((m) => m.state === 'delivered'),
        'delivered once the endpoint issues a token',
        10_000,
      );

      await send('oauth2', 'o-2');
      await send('oauth2', 'o-3');
      await eventually(
        async () => (await matchesOf(uuid)).length === 3 && (await matchesOf(uuid)).every((m) => m.state === 'delivered'),
        'the later events delivered',
        10_000,
      );
      assert.equal(endpoint.issued(), 1, 'one token for every delivery');
      assert.deepEqual(new Set(tokenTarget.authorizations), new Set(['Bearer token-1']));
      assert.equal(endpoint.forms.at(-1)?.get('scope'), 'events');
      const read = await (await fetch(`${server.url}/eventmatch/${uuid}`, { headers: USER })).json();
      assert.equal((read as { auth: { oauth2: { client_secret: string } } }).auth.oauth2.client_secret, '********');
      assert.ok(!server.logs().includes(CLIENT.secret), 'never logged');
      assert.ok(!server.logs().includes('token-1'), 'nor the token');
    });

    it('mtls: the client certificate is presented to the https target, which sees its subject', async () => {
      const url = `https://127.0.0.1:${(mtlsTarget.address() as AddressInfo).port}/hook`;
      const { uuid, text } = await subscribe('mtls', url, {
        type: 'mtls',
        mtls: { cert: pki.clientCert, key: pki.clientKey, ca: pki.caCert },
      });
      assert.ok(!text.includes('PRIVATE KEY'));
      assert.ok(!(await rawAuth(uuid)).includes('PRIVATE KEY'));
      await send('mtls', 'm-1');
      await eventually(async () => (await matchesOf(uuid)).some((m) => m.state === 'delivered'), 'delivered over mutual TLS', 10_000);
      assert.deepEqual(subjects, [pki.clientName]);
      assert.deepEqual(
        (await attemptsOf(uuid)).map((a) => [a.status, a.error]),
        [[204, null]],
      );
      assert.ok(!server.logs().includes('PRIVATE KEY'));
    });
  });
}
