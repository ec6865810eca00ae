import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Keyring } from '../../src/config/keyring.js';
import { openAuth } from '../../src/subscriptions/secret-box.js';
import { startEventmatchApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { makeTestPki, type TestPki } from '../support/test-pki.js';

const USER = { 'http-remote-user': 'alice' };
const SECRET = 'client-secret-that-must-stay-hidden';
const MASK = '********';
const oauth2 = {
  type: 'oauth2',
  oauth2: { token_url: 'https://idp.example.org/oauth/token', client_id: 'pipeline', client_secret: SECRET, scope: 'events:write' },
};
const body = (auth: object, target_url = 'https://example.org/hook') => ({ name: 'n', jsonpath: '$.data', target_url, auth });

interface Answer {
  statusCode: number;
  code?: string;
  message?: string;
  uuid: string;
  auth: { type: string; oauth2?: Record<string, string>; mtls?: Record<string, string> };
}

for (const backend of testBackends()) {
  describeOn(backend, `/eventmatch oauth2 and mtls auth (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    let pki: TestPki;
    const key = randomBytes(32);
    before(async () => {
      pki = makeTestPki();
      test = await openTestDatabase(backend);
      app = await startEventmatchApp(test.handle, { secretKey: new Keyring([key]) });
    });
    after(async () => {
      await app.close();
      await test.close();
    });

    const send = async (method: 'POST' | 'PUT' | 'GET', url: string, payload?: object) => {
      const response = await app.inject({ method, url, headers: USER, ...(payload === undefined ? {} : { payload }) });
      return { ...response.json<Answer>(), statusCode: response.statusCode, raw: response.body };
    };
    const stored = async (uuid: string) => {
      const { auth } = await test.handle.db.selectFrom('subscriptions').select('auth').where('uuid', '=', uuid).executeTakeFirstOrThrow();
      return { raw: auth, opened: openAuth(auth, new Keyring([key])) };
    };
    const mtls = (extra: Record<string, string> = {}) => ({
      type: 'mtls',
      mtls: { cert: pki.clientCert, key: pki.clientKey, ca: pki.caCert, ...extra },
    });

    it('oauth2: the client_secret is sealed at rest and shown masked, on the create and on GET', async () => {
      const created = await send('POST', '/eventmatch', body(oauth2));
      assert.equal(created.statusCode, 200, created.raw);
      assert.deepEqual(created.auth, { type: 'oauth2', oauth2: { ...oauth2.oauth2, client_secret: MASK } });
      assert.ok(!created.raw.includes(SECRET));
      const read = await send('GET', `/eventmatch/${created.uuid}`);
      assert.deepEqual(read.auth, created.auth);
      const listed = await app.inject({ method: 'GET', url: '/eventmatch', headers: USER });
      assert.ok(!listed.body.includes(SECRET));
      const { raw, opened } = await stored(created.uuid);
      assert.match(raw, /^v1:/);
      assert.ok(!raw.includes(SECRET) && !raw.includes('pipeline'));
      assert.deepEqual(opened, oauth2);
    });

    it('oauth2: a PUT of the record as read keeps the stored secret; a new secret replaces it', async () => {
      const created = await send('POST', '/eventmatch', body(oauth2));
      const asRead = await send('GET', `/eventmatch/${created.uuid}`);
      const { statusCode: _status, raw: _raw, ...record } = asRead;
      const put = await send('PUT', `/eventmatch/${created.uuid}`, { ...record, name: 'renamed' });
      assert.equal(put.statusCode, 200, put.raw);
      assert.deepEqual((await stored(created.uuid)).opened, oauth2);

      const scoped = { type: 'oauth2', oauth2: { ...asRead.auth.oauth2, scope: 'other' } };
      assert.equal((await send('PUT', `/eventmatch/${created.uuid}`, { auth: scoped })).statusCode, 200);
      assert.deepEqual((await stored(created.uuid)).opened, { type: 'oauth2', oauth2: { ...oauth2.oauth2, scope: 'other' } });

      const renewed = { type: 'oauth2', oauth2: { ...oauth2.oauth2, client_secret: 'new-secret' } };
      assert.equal((await send('PUT', `/eventmatch/${created.uuid}`, { auth: renewed })).statusCode, 200);
      assert.ok(!(await stored(created.uuid)).raw.includes('new-secret'));
      assert.deepEqual((await stored(created.uuid)).opened, renewed);
    });

    it('oauth2: the mask keeps nothing on a create, nor with another token_url or client_id, nor for another type', async () => {
      const masked = { type: 'oauth2', oauth2: { ...oauth2.oauth2, client_secret: MASK } };
      const create = await send('POST', '/eventmatch', body(masked));
      assert.equal(create.statusCode, 400);
      assert.equal(create.message, `body.auth.oauth2.client_secret: is "${MASK}", which keeps a stored secret: send the secret itself`);

      const created = await send('POST', '/eventmatch', body(oauth2));
      const elsewhere = { type: 'oauth2', oauth2: { ...masked.oauth2, token_url: 'https://attacker.example.org/token' } };
      const moved = await send('PUT', `/eventmatch/${created.uuid}`, { auth: elsewhere });
      assert.equal(moved.statusCode, 400);
      assert.equal(
        moved.message,
        `body.auth.oauth2.client_secret: is "${MASK}", which keeps the stored secret, but token_url or client_id changed: send the secret itself`,
      );
      const basic = await send('POST', '/eventmatch', body({ type: 'basic', basic: { username: 'u', password: 'p' } }));
      const other = await send('PUT', `/eventmatch/${basic.uuid}`, { auth: masked });
      assert.equal(other.statusCode, 400);
      assert.match(other.message ?? '', /but the stored auth is not oauth2/);
      assert.deepEqual((await stored(created.uuid)).opened, oauth2, 'unchanged');
    });

    it('oauth2: 400 naming the member for what cannot be used', async () => {
      const cases: Array<[object, string]> = [
        [{ type: 'oauth2' }, 'body.auth.oauth2: required when type is "oauth2"'],
        [{ type: 'oauth2', oauth2: { client_id: 'c', client_secret: 's' } }, 'body.auth.oauth2.token_url: required'],
        [
          { type: 'oauth2', oauth2: { ...oauth2.oauth2, token_url: 'ftp://idp/token' } },
          'body.auth.oauth2.token_url: must be an absolute http or https URL, not ftp:',
        ],
        [
          { type: 'oauth2', oauth2: { ...oauth2.oauth2, token_url: 'https://u:p@idp.example.org/token' } },
          'body.auth.oauth2.token_url: must not contain credentials: the client authenticates with client_id and client_secret',
        ],
        [
          { type: 'oauth2', oauth2: { ...oauth2.oauth2, token_url: 'http://169.254.169.254/token' } },
          'body.auth.oauth2.token_url: address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY',
        ],
        [{ type: 'oauth2', oauth2: { ...oauth2.oauth2, client_id: '' } }, 'body.auth.oauth2.client_id: must not be empty'],
        [
          { type: 'oauth2', oauth2: { ...oauth2.oauth2, scope: 'a  b' } },
          'body.auth.oauth2.scope: must be scope tokens of visible ASCII (no " or \\) separated by single spaces',
        ],
        [{ type: 'oauth2', oauth2: { ...oauth2.oauth2, grant: 'password' } }, 'body.auth.oauth2: unknown field "grant"'],
      ];
      for (const [auth, message] of cases) {
        const answer = await send('POST', '/eventmatch', body(auth));
        assert.equal(answer.statusCode, 400, message);
        assert.equal(answer.message, message);
        assert.ok(!answer.raw.includes(SECRET));
      }
      const broker = await send('POST', '/eventmatch', body(oauth2, 'amqp://127.0.0.1/?routing_key=q'));
      assert.equal(broker.statusCode, 400);
      assert.equal(
        broker.message,
        `body.auth.type: must be "basic" (the broker's user name and password), or send {} for none: the target_url is a broker's (amqp)`,
      );
    });

    it('mtls: the key is sealed and shown masked; a PUT as read keeps it, also with a certificate of the same key', async () => {
      const created = await send('POST', '/eventmatch', body(mtls()));
      assert.equal(created.statusCode, 200, created.raw);
      assert.deepEqual(created.auth, { type: 'mtls', mtls: { cert: pki.clientCert, key: MASK, ca: pki.caCert } });
      assert.ok(!created.raw.includes('PRIVATE KEY'));
      const { raw, opened } = await stored(created.uuid);
      assert.ok(!raw.includes('PRIVATE KEY'));
      assert.deepEqual(opened, mtls());

      const asRead = await send('GET', `/eventmatch/${created.uuid}`);
      assert.equal((await send('PUT', `/eventmatch/${created.uuid}`, { auth: asRead.auth })).statusCode, 200);
      assert.deepEqual((await stored(created.uuid)).opened, mtls());
      const withoutCa = { type: 'mtls', mtls: { cert: pki.clientCert, key: MASK } };
      assert.equal((await send('PUT', `/eventmatch/${created.uuid}`, { auth: withoutCa })).statusCode, 200);
      assert.deepEqual((await stored(created.uuid)).opened, { type: 'mtls', mtls: { cert: pki.clientCert, key: pki.clientKey } });
      // Another certificate with the mask: the stored key must be its key.
      const otherCert = { type: 'mtls', mtls: { cert: pki.serverCert, key: MASK } };
      const mismatch = await send('PUT', `/eventmatch/${created.uuid}`, { auth: otherCert });
      assert.equal(mismatch.statusCode, 400);
      assert.equal(
        mismatch.message,
        'body.auth.mtls.key: does not match the certificate of body.auth.mtls.cert (its public key is another)',
      );
    });

    it('mtls: 400 naming the field for a certificate, key or ca that cannot be used, or an http target', async () => {
      const cases: Array<[object, string]> = [
        [mtls({ cert: 'not a certificate' }), 'body.auth.mtls.cert: must hold a PEM certificate (-----BEGIN CERTIFICATE-----)'],
        [
          mtls({ cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' }),
          'body.auth.mtls.cert: certificate 1 does not parse as X.509',
        ],
        [
          mtls({ cert: `${pki.clientCert}\ntrailing words` }),
          'body.auth.mtls.cert: must hold PEM certificates only, nothing around or between them',
        ],
        [mtls({ key: 'garbage' }), 'body.auth.mtls.key: must be a PEM private key (-----BEGIN PRIVATE KEY-----)'],
        [
          mtls({ key: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' }),
          'body.auth.mtls.key: does not parse as a PEM private key',
        ],
        [
          mtls({ key: '-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n' }),
          'body.auth.mtls.key: must not be encrypted (no passphrase can be given)',
        ],
        [
          mtls({ key: pki.otherKey }),
          'body.auth.mtls.key: does not match the certificate of body.auth.mtls.cert (its public key is another)',
        ],
        [mtls({ ca: pki.clientKey }), 'body.auth.mtls.ca: must hold a PEM certificate (-----BEGIN CERTIFICATE-----)'],
        [
          mtls({ ca: `${pki.caCert}-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n` }),
          'body.auth.mtls.ca: certificate 2 does not parse as X.509',
        ],
        [{ type: 'mtls', mtls: { cert: pki.clientCert } }, 'body.auth.mtls.key: required'],
        [mtls({ key: MASK }), `body.auth.mtls.key: is "${MASK}", which keeps a stored secret: send the secret itself`],
        [{ type: 'mtls', mtls: { cert: 'x'.repeat(65_537), key: 'k' } }, 'body.auth.mtls.cert: at most 65536 characters (found 65537)'],
      ];
      for (const [auth, message] of cases) {
        const answer = await send('POST', '/eventmatch', body(auth));
        assert.equal(answer.statusCode, 400, message);
        assert.equal(answer.message, message);
        assert.ok(!answer.raw.includes('PRIVATE KEY-----\nMI'), 'the key is never quoted');
      }
      const http = await send('POST', '/eventmatch', body(mtls(), 'http://example.org/hook'));
      assert.equal(http.statusCode, 400);
      assert.equal(
        http.message,
        'body.auth.type: "mtls" (a client certificate presented in the TLS handshake) needs a target_url of scheme https',
      );
      const created = await send('POST', '/eventmatch', body(mtls()));
      const moved = await send('PUT', `/eventmatch/${created.uuid}`, { target_url: 'http://example.org/hook' });
      assert.equal(moved.statusCode, 400);
      assert.match(moved.message ?? '', /^body\.auth\.type: "mtls" .* needs a target_url of scheme https$/);
    });
  });
}
