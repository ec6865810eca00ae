/**
 * The whole way of an event: the built server as a process, the policy service and the
 * targets as real HTTP servers on 127.0.0.1, on every database.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { facilityEventText } from '../support/fixtures.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, reply, startStub } from '../support/http-stub.js';
import { type RunningServer } from '../support/processes.js';
import { serverOn } from '../support/server-on.js';

const FIXTURE = facilityEventText();
const FACILITY_TYPE = 'application/cloudevents+json; charset=utf-8';
/** States a match does not leave: nothing more is sent for it. */
const FINISHED = new Set(['delivered', 'denied', 'failed', 'cancelled']);

async function subscribe(server: RunningServer, user: string, body: Record<string, unknown>): Promise<{ uuid: string }> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'http-remote-user': user },
    body: JSON.stringify({ name: `${user}'s`, jsonpath: "$.data[?@.destinationTable == 'Files']", ...body }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()) as { uuid: string };
}

async function receive(
  server: RunningServer,
  body: string,
  contentType = FACILITY_TYPE,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${server.url}/receive`, { method: 'POST', headers: { 'content-type': contentType, ...headers }, body });
}

function event(id: string, data: unknown = { destinationTable: 'Files' }): string {
  return JSON.stringify({ specversion: '1.0', id, source: '/e2e', type: 'org.example.test', data: [data] });
}

for (const backend of testBackends()) {
  describeOn(backend, `routing end to end (${backend.name})`, () => {
    let policy: HttpStub;
    before(async () => {
      // The policy service denies bob, allows everyone else.
      policy = await startStub((request, response) => {
        response.writeHead(request.url === '/events/bob' ? 403 : 200).end();
      });
    });
    const server = serverOn(
      backend,
      () => ({
        NOTIFICATIONS_POLICY_URL: policy.url,
        NOTIFICATIONS_RETRY_DELAYS: '100ms,200ms,300ms',
        NOTIFICATIONS_TARGET_TIMEOUT: '500ms',
        NOTIFICATIONS_LEASE: '5s',
      }),
      { open: true },
    );
    const targets: HttpStub[] = [];
    const target = async () => {
      const stub = await startStub();
      targets.push(stub);
      return stub;
    };
    const matchesOf = (subscription: string) =>
      server.db.db.selectFrom('matches').selectAll().where('subscription_uuid', '=', subscription).orderBy('created').execute();
    /** Once every match of `event` is finished (nothing of it is left to send), their states. */
    const settledMatchesOfEvent = async (event: string) => {
      const rows = () => server.db.db.selectFrom('matches').selectAll().where('event_uuid', '=', event).execute();
      await eventually(async () => (await rows()).every((row) => FINISHED.has(row.state)), `every match of ${event} is finished`);
      return rows();
    };
    const subscriptionRow = (uuid: string) =>
      server.db.db.selectFrom('subscriptions').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();

    // Registered after serverOn's: the stubs close once the server has stopped.
    after(async () => {
      for (const stub of [policy, ...targets]) await stub.close();
    });

    it('delivers to allowed users with their credentials; a denied user is recorded, never delivered', async () => {
      const basic = await target();
      const bearer = await target();
      const denied = await target();
      const a = await subscribe(server, 'alice', {
        target_url: `${basic.url}/hook`,
        auth: { type: 'basic', basic: { username: 'pipe', password: 'line' } },
      });
      const b = await subscribe(server, 'alice', {
        target_url: `${bearer.url}/hook`,
        auth: { type: 'header', header: { type: 'Bearer', credentials: 'tok-123' } },
        extensions: { project: '1234' },
      });
      const c = await subscribe(server, 'bob', { target_url: `${denied.url}/hook` });

      const answer = await receive(server, FIXTURE);
      assert.equal(answer.status, 200);
      const logged = (await answer.json()) as { uuid: string; matches: number };
      assert.equal(logged.matches, 3);

      await eventually(() => basic.requests.length === 1 && bearer.requests.length === 1, 'both of alice’s targets are called');
      assert.equal(basic.requests[0]!.headers.authorization, `Basic ${Buffer.from('pipe:line').toString('base64')}`);
      assert.equal(bearer.requests[0]!.headers.authorization, 'Bearer tok-123');
      assert.match(String(basic.requests[0]!.headers['content-type']), /^application\/cloudevents\+json/);
      const delivered = JSON.parse(bearer.requests[0]!.body) as { eventID: string; extensions: Record<string, unknown> };
      assert.equal(delivered.eventID, 'C234-1234-1234');
      assert.equal(delivered.extensions.project, '1234', 'the subscription’s extensions travel with the event');

      await eventually(async () => (await matchesOf(c.uuid))[0]?.state === 'denied', 'bob’s match is denied');
      const bobs = await matchesOf(c.uuid);
      assert.equal(bobs[0]!.policy_code, 403);
      assert.equal(denied.requests.length, 0);
      await eventually(async () => (await matchesOf(a.uuid))[0]?.state === 'delivered', 'alice’s match is delivered');
      // Called is not recorded yet: wait for the other one's outcome too before reading it.
      await eventually(async () => (await matchesOf(b.uuid))[0]?.state === 'delivered', 'alice’s other match is delivered');
      const alices = await matchesOf(b.uuid);
      assert.deepEqual([alices[0]!.policy_code, alices[0]!.target_code], [200, 200]);
      assert.equal(
        policy.requests.filter((r) => r.url === '/events/alice').length,
        1,
        'one policy call per (event, user), not per subscription',
      );

      const again = await receive(server, FIXTURE);
      assert.deepEqual(await again.json(), { ...logged, duplicate: true });
      // The duplicate added no match, and every match there is has finished: nothing is left
      // that could be sent again, however long one waited.
      const settled = await settledMatchesOfEvent(logged.uuid);
      assert.deepEqual(settled.map((m) => `${m.state} after ${m.attempts} deliveries`).sort(), [
        'delivered after 1 deliveries',
        'delivered after 1 deliveries',
        'denied after 0 deliveries',
      ]);
      assert.equal(basic.requests.length, 1, 'a duplicate event is routed once');
    });

    it('retries a failing target until it answers; gives up on a 404 and disables the subscription', async () => {
      const flaky = await target();
      flaky.answer(reply(500, 'busy'));
      const gone = await target();
      gone.answer(reply(404, 'no such hook'));
      const f = await subscribe(server, 'carol', { target_url: flaky.url, jsonpath: "$[?$.id == 'retry-1']" });
      const g = await subscribe(server, 'carol', { target_url: gone.url, jsonpath: "$[?$.id == 'retry-1']" });
      assert.equal((await receive(server, event('retry-1'), 'application/cloudevents+json')).status, 200);
      await eventually(() => flaky.requests.length >= 2, 'the failing target is tried again');
      flaky.answer(reply(204));
      await eventually(async () => (await matchesOf(f.uuid))[0]?.state === 'delivered', 'delivered once the target recovers');
      await eventually(async () => (await subscriptionRow(g.uuid)).disabled !== null, 'the 404 disables the subscription');
      const disabled = await subscriptionRow(g.uuid);
      assert.match(disabled.error ?? '', /404.*no such hook/);
      assert.equal((await matchesOf(g.uuid))[0]!.state, 'failed');
      assert.equal((await matchesOf(g.uuid))[0]!.target_code, 404);
      const attempts = await server.db.db
        .selectFrom('attempts')
        .selectAll()
        .where('match_uuid', '=', (await matchesOf(f.uuid))[0]!.uuid)
        .execute();
      assert.ok(attempts.length >= 3, 'every attempt is kept');
    });

    it('routes an event once, whether its duplicate comes in the same batch or at the same moment', async () => {
      const hook = await target();
      const erin = await subscribe(server, 'erin', { target_url: hook.url, jsonpath: "$[?$.source == '/dups']" });
      const one = (id: string) => ({ specversion: '1.0', id, source: '/dups', type: 't' });
      const batch = await receive(server, JSON.stringify([one('a'), one('a'), one('b')]), 'application/cloudevents-batch+json');
      const answers = (await batch.json()) as Array<{ uuid: string; matches: number; duplicate?: boolean }>;
      assert.equal(answers.length, 3);
      assert.deepEqual(answers[1], { uuid: answers[0]!.uuid, matches: 1, duplicate: true });
      assert.equal(answers[2]!.duplicate, undefined);
      const concurrent = await Promise.all(
        Array.from(
          { length: 10 },
          async () =>
            (await receive(server, JSON.stringify(one('c')), 'application/cloudevents+json')).json() as Promise<{
              uuid: string;
              duplicate?: boolean;
            }>,
        ),
      );
      assert.equal(concurrent.filter((c) => !c.duplicate).length, 1, 'one of them is the event, the others duplicates');
      assert.equal(new Set(concurrent.map((c) => c.uuid)).size, 1);
      await eventually(() => hook.requests.length === 3, 'a, b and c delivered');
      // One match per event, each delivered with one try and finished: nothing is left to send twice.
      for (const uuid of [answers[0]!.uuid, answers[2]!.uuid, concurrent[0]!.uuid]) {
        const settled = await settledMatchesOfEvent(uuid);
        assert.deepEqual(
          settled.map((m) => [m.subscription_uuid, m.state, m.attempts]),
          [[erin.uuid, 'delivered', 1]],
        );
      }
      assert.equal((await matchesOf(erin.uuid)).length, 3);
      assert.deepEqual(hook.requests.map((r) => (JSON.parse(r.body) as { id: string }).id).sort(), ['a', 'b', 'c'], 'and nothing twice');
    });

    it('a deleted subscription never matches again', async () => {
      const hook = await target();
      const gone = await subscribe(server, 'frank', { target_url: hook.url, jsonpath: "$[?$.source == '/deleted']" });
      const deleted = await fetch(`${server.url}/eventmatch/${gone.uuid}`, { method: 'DELETE', headers: { 'http-remote-user': 'frank' } });
      assert.equal(deleted.status, 200);
      const answer = await receive(
        server,
        JSON.stringify({ specversion: '1.0', id: 'after-delete', source: '/deleted', type: 't' }),
        'application/cloudevents+json',
      );
      assert.equal(((await answer.json()) as { matches: number }).matches, 0);
      // No match was made, so there is nothing that could be delivered later.
      assert.deepEqual(await matchesOf(gone.uuid), []);
      assert.equal(hook.requests.length, 0);
    });

    it('takes binary and batched modes', async () => {
      const hook = await target();
      await subscribe(server, 'dave', { target_url: hook.url, jsonpath: "$[?$.source == '/modes']" });
      const binary = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'ce-specversion': '1.0',
          'ce-id': 'b-1',
          'ce-source': '/modes',
          'ce-type': 'org.example',
        },
        body: JSON.stringify({ hello: 'world' }),
      });
      assert.equal(binary.status, 200, await binary.clone().text());
      const batch = await receive(
        server,
        JSON.stringify([1, 2].map((n) => ({ specversion: '1.0', id: `batch-${n}`, source: '/modes', type: 'org.example' }))),
        'application/cloudevents-batch+json',
      );
      assert.equal(batch.status, 200);
      assert.equal(((await batch.json()) as unknown[]).length, 2);
      await eventually(() => hook.requests.length === 3, 'all three events delivered');
    });
  });
}
