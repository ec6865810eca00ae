/**
 * Target consent, the whole way, on every database: the built server as a process with
 * NOTIFICATIONS_TARGET_VALIDATION=handshake, its targets real HTTP servers on 127.0.0.1. A
 * target is stored only when it consents, on create and on a change of target_url; what it
 * allowed per minute caps its deliveries with rate_limit; every delivery names our origin. With
 * the setting off (the default), targets are never asked.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, type HttpStub, type StubRequest, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const ORIGIN = 'notifications.test';
const ALICE = { 'content-type': 'application/json', 'http-remote-user': 'alice' };

interface ErrorAnswer {
  code: string;
  message: string;
}

for (const backend of testBackends()) {
  describeOn(backend, `target consent end to end (${backend.name})`, () => {
    const databases: TestDatabase[] = [];
    const stubs: HttpStub[] = [];
    let db: DatabaseHandle;
    let server: RunningServer;
    let unasked: RunningServer;

    /**
     * A target that consents to our origin when its path starts with /yes (allowing `rate` a
     * minute, when given, from /yes-<rate>), refuses with 405 otherwise, and answers every
     * delivery 200, recording when it came (ms).
     */
    async function target(): Promise<{ stub: HttpStub; options: () => StubRequest[]; deliveries: () => StubRequest[]; times: number[] }> {
      const times: number[] = [];
      const stub = await startStub((request, response) => {
        if (request.method !== 'OPTIONS') {
          times.push(performance.now());
          response.writeHead(200).end();
          return;
        }
        const rate = /^\/yes-(\d+)/.exec(request.url)?.[1];
        if (!request.url.startsWith('/yes')) response.writeHead(405, { allow: 'POST' }).end();
        else response.writeHead(200, { 'webhook-allowed-origin': ORIGIN, ...(rate ? { 'webhook-allowed-rate': rate } : {}) }).end();
      });
      stubs.push(stub);
      return {
        stub,
        options: () => stub.requests.filter((r) => r.method === 'OPTIONS'),
        deliveries: () => stub.requests.filter((r) => r.method === 'POST'),
        times,
      };
    }

    const create = (on: RunningServer, body: Record<string, unknown>) =>
      fetch(`${on.url}/eventmatch`, {
        method: 'POST',
        headers: ALICE,
        body: JSON.stringify({ name: 'n', jsonpath: '$.data.tag', ...body }),
      });
    const change = (uuid: string, body: Record<string, unknown>) =>
      fetch(`${server.url}/eventmatch/${uuid}`, { method: 'PUT', headers: ALICE, body: JSON.stringify(body) });
    async function created(on: RunningServer, body: Record<string, unknown>): Promise<string> {
      const response = await create(on, body);
      assert.equal(response.status, 200, await response.clone().text());
      return ((await response.json()) as { uuid: string }).uuid;
    }
    async function refused(response: Response): Promise<ErrorAnswer> {
      assert.equal(response.status, 400);
      const answer = (await response.json()) as ErrorAnswer;
      assert.equal(answer.code, 'TARGET_CONSENT_REFUSED');
      assert.match(answer.message, /^body\.target_url: the target did not consent/);
      return answer;
    }
    async function receive(on: RunningServer, tag: string, id: string): Promise<void> {
      const body = JSON.stringify({ specversion: '1.0', id, source: '/consent', type: 't', data: { tag } });
      const response = await fetch(`${on.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body,
      });
      assert.equal(response.status, 200, await response.text());
    }
    const subscriptionCount = async () => (await db.db.selectFrom('subscriptions').select('uuid').execute()).length;

    before(async () => {
      for (let i = 0; i < 2; i++) {
        const database = await syncedDatabase(backend);
        databases.push(database);
      }
      db = openDatabase(databases[0]!.url);
      const common = { NOTIFICATIONS_RETRY_DELAYS: '100ms', NOTIFICATIONS_TARGET_TIMEOUT: '2s', NOTIFICATIONS_LEASE: '10s' };
      [server, unasked] = await Promise.all([
        startServer({
          ...common,
          NOTIFICATIONS_DATABASE_URL: databases[0]!.url,
          NOTIFICATIONS_TARGET_VALIDATION: 'handshake',
          NOTIFICATIONS_ORIGIN: ORIGIN,
        }),
        startServer({ ...common, NOTIFICATIONS_DATABASE_URL: databases[1]!.url }),
      ]);
    });
    after(async () => {
      await Promise.all([server?.stop(), unasked?.stop()]);
      await db?.close();
      for (const stub of stubs) await stub.close();
      for (const database of databases) await database.cleanup();
    });

    it('stores a subscription whose target consents, and delivers to it naming our origin', async () => {
      const { stub, options, deliveries } = await target();
      const uuid = await created(server, {
        target_url: `${stub.url}/yes`,
        jsonpath: "$.data[?@ == 'consented']",
        rate_limit: 50,
        auth: { type: 'basic', basic: { username: 'u', password: 'p' } },
      });
      const [asked, ...more] = options();
      assert.equal(more.length, 0);
      assert.equal(asked!.url, '/yes');
      assert.equal(asked!.headers['webhook-request-origin'], ORIGIN);
      assert.equal(asked!.headers['webhook-request-rate'], '3000', 'rate_limit 50 a second, asked per minute');
      assert.equal(asked!.headers.authorization, `Basic ${Buffer.from('u:p').toString('base64')}`);

      await receive(server, 'consented', 'consented-1');
      await eventually(() => deliveries().length === 1, 'the event is delivered');
      assert.equal(deliveries()[0]!.headers['webhook-request-origin'], ORIGIN);
      const row = await db.db.selectFrom('subscriptions').select(['allowed_rate']).where('uuid', '=', uuid).executeTakeFirstOrThrow();
      assert.equal(row.allowed_rate, null, 'no WebHook-Allowed-Rate: no cap');
    });

    it('stores nothing when the target refuses, and says what it answered', async () => {
      const { stub, options } = await target();
      const count = await subscriptionCount();
      const answer = await refused(await create(server, { target_url: `${stub.url}/no` }));
      assert.match(answer.message, /OPTIONS answered 405$/);
      assert.equal(options().length, 1);
      assert.equal(await subscriptionCount(), count, 'nothing stored');
    });

    it('asks again only when target_url changes; a refused change leaves the subscription as it was', async () => {
      const first = await target();
      const second = await target();
      const uuid = await created(server, { target_url: `${first.stub.url}/yes-600` });
      assert.equal(first.options().length, 1);

      const same = await change(uuid, { name: 'renamed', target_url: `${first.stub.url}/yes-600` });
      assert.equal(same.status, 200, await same.text());
      assert.equal(first.options().length, 1, 'the same target is not asked again');

      await refused(await change(uuid, { name: 'moved', target_url: `${second.stub.url}/no` }));
      const stored = await db.db.selectFrom('subscriptions').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();
      assert.equal(stored.name, 'renamed');
      assert.equal(stored.target_url, `${first.stub.url}/yes-600`);
      assert.equal(stored.allowed_rate, 600);

      const moved = await change(uuid, { target_url: `${second.stub.url}/yes` });
      assert.equal(moved.status, 200, await moved.text());
      assert.equal(second.options().length, 2);
      const now = await db.db
        .selectFrom('subscriptions')
        .select(['target_url', 'allowed_rate'])
        .where('uuid', '=', uuid)
        .executeTakeFirstOrThrow();
      assert.deepEqual(now, { target_url: `${second.stub.url}/yes`, allowed_rate: null }, "the old target's cap went with it");
    });

    it('refuses a denied address before asking it', async () => {
      const answer = (await (await create(server, { target_url: 'http://169.254.169.254/yes' })).json()) as ErrorAnswer;
      assert.equal(answer.code, 'TARGET_DENIED');
    });

    it('holds deliveries to the rate the target allowed when it is lower than rate_limit, and drops none', async () => {
      const { stub, times } = await target();
      // 120 a minute is 2 a second, under the subscription's own 10.
      await created(server, { target_url: `${stub.url}/yes-120`, jsonpath: "$.data[?@ == 'capped']", rate_limit: 10 });
      await Promise.all(Array.from({ length: 6 }, (_, i) => receive(server, 'capped', `capped-${i}`)));
      await eventually(() => times.length >= 6, 'all 6 deliveries arrive', 30_000);
      const spanMs = times.at(-1)! - times[0]!;
      // 5 gaps of 500 ms: 2.5 s; at rate_limit's 10 a second it would be 0.5 s.
      assert.ok(spanMs >= 2_000, `6 deliveries at 2 a second took ${Math.round(spanMs)} ms`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(times.length, 6, 'each delivered once');
    });

    it('with NOTIFICATIONS_TARGET_VALIDATION off (the default), never asks and sends no origin', async () => {
      const { stub, options, deliveries } = await target();
      await created(unasked, { target_url: `${stub.url}/no`, jsonpath: "$.data[?@ == 'unasked']" });
      await receive(unasked, 'unasked', 'unasked-1');
      await eventually(() => deliveries().length === 1, 'the event is delivered');
      assert.equal(options().length, 0);
      assert.equal(deliveries()[0]!.headers['webhook-request-origin'], undefined);
    });
  });
}
