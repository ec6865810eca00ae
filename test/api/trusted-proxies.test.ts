/**
 * NOTIFICATIONS_TRUSTED_PROXIES: the identity header, the default user and a client's
 * X-Request-Id are believed only on connections from the listed peers. Tested over real
 * connections from loopback, with a list that leaves loopback out.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { type PeerList, peerList } from '../../src/net/peer-list.js';
import { startApiApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const NOT_LOOPBACK = peerList(['10.0.0.0/8', 'fd00::/8']);
const SUBSCRIPTION = { name: 'mine', jsonpath: '$.id', target_url: 'https://pipeline.example.org/hook' };

for (const backend of testBackends()) {
  describeOn(backend, `trusted proxies (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    const apps: FastifyInstance[] = [];
    before(async () => {
      test = await openTestDatabase(backend);
    });
    after(async () => {
      for (const app of apps) await app.close();
      await test.close();
    });

    /** The API app on this database, listening on `host`, believing `trusted`; its base URL seen from loopback. */
    async function serve(trusted: PeerList | undefined, host = '127.0.0.1', defaultUser: string | null = null): Promise<string> {
      const app = await startApiApp(test.handle, {
        app: trusted === undefined ? {} : { trustedProxies: trusted },
        identity: { defaultUser, ...(trusted === undefined ? {} : { trustedProxies: trusted }) },
      });
      apps.push(app);
      await app.listen({ host, port: 0 });
      return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    }

    async function call(
      url: string,
      init: RequestInit = {},
    ): Promise<{ status: number; body: Record<string, unknown>; requestId: string }> {
      const answer = await fetch(url, init);
      return {
        status: answer.status,
        body: (await answer.json()) as Record<string, unknown>,
        requestId: answer.headers.get('x-request-id') ?? '',
      };
    }

    const create = (base: string, headers: Record<string, string>) =>
      call(`${base}/eventmatch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(SUBSCRIPTION),
      });

    describe('from a peer outside the list', () => {
      let untrusted = '';
      let trusted = '';
      before(async () => {
        untrusted = await serve(NOT_LOOPBACK);
        trusted = await serve(undefined);
      });

      it('answers 401 IDENTITY_UNTRUSTED, naming the header, to any route that carries it, and acts on none', async () => {
        const uuid = randomUUID();
        const attempts: Array<[string, RequestInit]> = [
          [
            '/eventmatch',
            {
              method: 'POST',
              headers: { 'http-remote-user': 'alice', 'content-type': 'application/json' },
              body: JSON.stringify(SUBSCRIPTION),
            },
          ],
          ['/eventmatch', { headers: { 'http-remote-user': 'alice' } }],
          [`/eventmatch/${uuid}`, { method: 'DELETE', headers: { 'http-remote-user': 'alice' } }],
          [`/eventmatch/${uuid}/deliveries`, { headers: { 'http-remote-user': 'alice' } }],
          [`/eventmatch/${uuid}/deliveries/${randomUUID()}/retry`, { method: 'POST', headers: { 'http-remote-user': '' } }],
        ];
        for (const [path, init] of attempts) {
          const answer = await call(`${untrusted}${path}`, init);
          assert.equal(answer.status, 401, `${path}: ${JSON.stringify(answer.body)}`);
          assert.equal(answer.body.code, 'IDENTITY_UNTRUSTED', path);
          assert.match(
            String(answer.body.message),
            /^Http-Remote-User: not honoured from (::ffff:)?127\.0\.0\.1, .*NOTIFICATIONS_TRUSTED_PROXIES/,
            path,
          );
        }
        const alices = await call(`${trusted}/eventmatch`, { headers: { 'http-remote-user': 'alice' } });
        assert.equal(alices.status, 200);
        assert.deepEqual(alices.body, [], 'nothing was made as alice');
      });

      it('answers 401 UNAUTHENTICATED without the header, even with a default user configured', async () => {
        const withDefault = await serve(NOT_LOOPBACK, '127.0.0.1', 'facility');
        for (const base of [untrusted, withDefault]) {
          const answer = await create(base, {});
          assert.equal(answer.status, 401, JSON.stringify(answer.body));
          assert.equal(answer.body.code, 'UNAUTHENTICATED');
          assert.match(String(answer.body.message), /front proxy.*Http-Remote-User/);
        }
        const facility = await call(`${trusted}/eventmatch`, { headers: { 'http-remote-user': 'facility' } });
        assert.deepEqual(facility.body, [], 'nothing was made as the default user');
      });

      it("replaces the client's X-Request-Id with one of its own", async () => {
        const answer = await call(`${untrusted}/eventmatch`, { headers: { 'x-request-id': 'chosen-by-the-client' } });
        assert.equal(answer.status, 401);
        assert.match(answer.requestId, UUID);
      });
    });

    describe('from a trusted proxy', () => {
      it('believes the header on a connection from loopback to a server listening on every address (::ffff:127.0.0.1)', async () => {
        const base = await serve(undefined, '::');
        const made = await create(base, { 'http-remote-user': 'bob' });
        assert.equal(made.status, 200, JSON.stringify(made.body));
        assert.equal(made.body.user, 'bob');
      });

      it('believes the default user when the header is absent', async () => {
        const base = await serve(peerList(['10.0.0.0/8', '127.0.0.1']), '127.0.0.1', 'facility');
        const made = await create(base, {});
        assert.equal(made.status, 200, JSON.stringify(made.body));
        assert.equal(made.body.user, 'facility');
      });

      it("keeps the proxy's X-Request-Id", async () => {
        const base = await serve(undefined);
        const answer = await call(`${base}/eventmatch`, { headers: { 'http-remote-user': 'carol', 'x-request-id': 'from-the-proxy-1' } });
        assert.equal(answer.status, 200);
        assert.equal(answer.requestId, 'from-the-proxy-1');
      });
    });
  });
}
