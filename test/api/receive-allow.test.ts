/**
 * NOTIFICATIONS_RECEIVE_ALLOW: a POST /receive from a peer outside the list is answered 403
 * RECEIVE_FORBIDDEN, and nothing of it is logged: no event, no log line, however many come.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { type PeerList, peerList } from '../../src/net/peer-list.js';
import { startApiApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually } from '../support/http-stub.js';

const STRUCTURED = { 'content-type': 'application/cloudevents+json' };
const event = (id: string) => JSON.stringify({ specversion: '1.0', id, source: '/receive-allow', type: 'org.example.test' });

/** A logger at info level, as the service's, whose lines are kept. */
function recordingLogger(): { logger: FastifyBaseLogger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  return { logger, lines };
}

for (const backend of testBackends()) {
  describeOn(backend, `/receive allow-list (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    const apps: FastifyInstance[] = [];
    before(async () => {
      test = await openTestDatabase(backend);
    });
    after(async () => {
      for (const app of apps) await app.close();
      await test.close();
    });

    async function serve(
      allow: PeerList | null,
      logger: FastifyBaseLogger | string = 'silent',
      token: string | null = null,
    ): Promise<string> {
      // Every request logged, so that a forbidden one's missing line is its peer's doing.
      const app = await startApiApp(test.handle, { app: { logger, logRequests: 'all' }, receiveAllow: allow, receiveToken: token });
      apps.push(app);
      await app.listen({ host: '127.0.0.1', port: 0 });
      return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    }
    const eventIds = async () => (await test.handle.db.selectFrom('events').select('event_id').execute()).map((row) => row.event_id).sort();

    it('answers 403 RECEIVE_FORBIDDEN to a peer outside the list, before the token, and logs no event', async () => {
      const base = await serve(peerList(['10.0.0.0/8', 'fd00::/8']), 'silent', 'the-token');
      for (const headers of [
        STRUCTURED,
        { ...STRUCTURED, authorization: 'Bearer the-token' },
        { ...STRUCTURED, authorization: 'Bearer wrong' },
      ]) {
        const answer = await fetch(`${base}/receive`, { method: 'POST', headers, body: event('forbidden-1') });
        assert.equal(answer.status, 403);
        assert.deepEqual(await answer.json(), {
          statusCode: 403,
          error: 'Forbidden',
          code: 'RECEIVE_FORBIDDEN',
          message: '/receive: not accepted from 127.0.0.1, which is not in NOTIFICATIONS_RECEIVE_ALLOW',
        });
      }
      assert.deepEqual(await eventIds(), []);
    });

    it('takes events from a peer in the list, and from any peer without one', async () => {
      for (const [allow, id] of [
        [peerList(['10.0.0.0/8', '127.0.0.1']), 'allowed-1'],
        [null, 'allowed-2'],
      ] as const) {
        const answer = await fetch(`${await serve(allow)}/receive`, { method: 'POST', headers: STRUCTURED, body: event(id) });
        assert.equal(answer.status, 200, await answer.clone().text());
      }
      assert.deepEqual(await eventIds(), ['allowed-1', 'allowed-2']);
    });

    it('documents the 403 in /openapi.json, beside the cross-site one', async () => {
      const document = (await (await fetch(`${await serve(null)}/openapi.json`)).json()) as {
        paths: Record<
          string,
          { post: { responses: Record<string, { content: Record<string, { schema: { properties: { code: { enum: string[] } } } }> }> } }
        >;
      };
      const forbidden = document.paths['/receive']!.post.responses['403']!;
      assert.deepEqual(forbidden.content['application/json']!.schema.properties.code.enum, ['RECEIVE_FORBIDDEN', 'CROSS_SITE_REQUEST']);
    });

    it('writes no log line for a forbidden request, while others are logged as ever', async () => {
      const { logger, lines } = recordingLogger();
      const base = await serve(peerList(['10.0.0.0/8']), logger);
      const forbidden: string[] = [];
      for (let i = 0; i < 20; i++) {
        const answer = await fetch(`${base}/receive`, { method: 'POST', headers: STRUCTURED, body: event(`flood-${i}`) });
        assert.equal(answer.status, 403);
        await answer.arrayBuffer();
        forbidden.push(answer.headers.get('x-request-id') ?? '');
      }
      // Another request, logged: once its last line is written, so would any line of the ones before.
      const other = await fetch(`${base}/eventmatch`, { headers: { 'http-remote-user': 'alice' } });
      const otherId = other.headers.get('x-request-id') ?? '';
      await other.arrayBuffer();
      await eventually(() => lines.some((line) => line.includes(otherId) && line.includes('request answered')), 'the other request logged');
      for (const id of forbidden) assert.ok(!lines.some((line) => line.includes(id)), `a line for forbidden request ${id}`);
      assert.ok(!lines.some((line) => line.includes('/receive')), lines.join(''));
    });
  });
}
