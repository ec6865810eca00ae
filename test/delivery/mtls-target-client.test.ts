import assert from 'node:assert/strict';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { before, describe, it, type TestContext } from 'node:test';
import { createTargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import type { Auth } from '../../src/subscriptions/input.js';
import { makeTestPki, type TestPki } from '../support/test-pki.js';
import { DEFAULT_TARGET_RULES } from '../support/target-guard.js';

const EVENT = JSON.stringify({ specversion: '1.0', id: 'e-1', source: '/s', type: 't' });

/** An https target that asks for a client certificate its CA signed, and refuses the handshake without one. */
async function mtlsTarget(t: TestContext, pki: TestPki): Promise<{ url: string; subjects: string[] }> {
  const subjects: string[] = [];
  const server: Server = createServer(
    { cert: pki.serverCert, key: pki.serverKey, ca: pki.caCert, requestCert: true, rejectUnauthorized: true },
    (request, response) => {
      subjects.push((request.socket as TLSSocket).getPeerCertificate().subject.CN as string);
      request.resume().on('end', () => response.writeHead(204).end());
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, subjects };
}

function client(t: TestContext) {
  const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 2, guard: addressGuard(DEFAULT_TARGET_RULES) });
  t.after(() => target.close());
  return target;
}

describe('target client: mutual TLS', () => {
  let pki: TestPki;
  before(() => {
    pki = makeTestPki();
  });
  const mtls = (extra: Partial<{ ca: string; key: string; cert: string }> = {}): Auth => ({
    type: 'mtls',
    mtls: { cert: pki.clientCert, key: pki.clientKey, ca: pki.caCert, ...extra },
  });

  it('presents the client certificate; the target sees its subject; ca makes the target trusted', async (t) => {
    const target = await mtlsTarget(t, pki);
    const post = client(t);
    for (let n = 0; n < 3; n++) assert.equal((await post.post({ url: target.url, auth: mtls(), body: EVENT })).status, 204);
    assert.deepEqual(target.subjects, [pki.clientName, pki.clientName, pki.clientName]);
  });

  it('fails the TLS handshake without a client certificate, and keeps connections of each certificate apart', async (t) => {
    const target = await mtlsTarget(t, pki);
    // The target itself: trusted, but presented no certificate, it ends the handshake.
    const refused = await new Promise<Error>((resolve, reject) => {
      const request = httpsRequest(target.url, { method: 'POST', ca: pki.caCert }, () => reject(new Error('answered')));
      request.on('error', resolve);
      request.end(EVENT);
    });
    assert.match(`${(refused as NodeJS.ErrnoException).code} ${refused.message}`, /certificate required|ECONNRESET|alert/i);

    const post = client(t);
    // The same origin, with a certificate first: a kept connection would be reused if pools were by origin alone.
    assert.equal((await post.post({ url: target.url, auth: mtls(), body: EVENT })).status, 204);
    const without = await post.post({
      url: target.url,
      auth: { type: 'header', header: { type: 'Bearer', credentials: 'x' } },
      body: EVENT,
    });
    assert.equal(without.status, null);
    assert.match(without.error ?? '', /^TLS failed: /);
    assert.equal(without.permanent, false);
    assert.deepEqual(target.subjects, [pki.clientName]);
  });

  it('trusts the default roots and not only ca: without ca, a server certificate of a private CA is refused', async (t) => {
    const target = await mtlsTarget(t, pki);
    const { ca: _, ...withoutCa } = (mtls() as { mtls: { cert: string; key: string; ca?: string } }).mtls;
    const response = await client(t).post({ url: target.url, auth: { type: 'mtls', mtls: withoutCa }, body: EVENT });
    assert.equal(response.status, null);
    assert.match(response.error ?? '', /^TLS failed: .*(self-signed|unable to (get|verify))/i);
  });
});
