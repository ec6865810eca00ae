/**
 * Pull delivery end to end: the built server as a process, the policy service a real HTTP stub,
 * on every database; on PostgreSQL also two server processes, one's long poll woken by an event
 * received by the other.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { createSubscription, history, pull, pullSubscription, receive, waitersAre } from '../support/pull-client.js';
import { EventStreamReader } from '../support/event-stream.js';
import { serverOn } from '../support/server-on.js';

function event(id: string): string {
  return JSON.stringify({ specversion: '1.0', id, source: '/e2e-pull', type: 'org.example.pull', data: { n: 1.5 } });
}

for (const backend of testBackends()) {
  describeOn(backend, `pull delivery end to end (${backend.name})`, () => {
    let policy: HttpStub;
    const env = () => ({
      NOTIFICATIONS_DATABASE_URL: server.database.url,
      NOTIFICATIONS_POLICY_URL: policy.url,
      NOTIFICATIONS_RETRY_DELAYS: '100ms',
      NOTIFICATIONS_TARGET_TIMEOUT: '1s',
      NOTIFICATIONS_LEASE: '5s',
    });

    before(async () => {
      // The policy service denies bob, allows everyone else.
      policy = await startStub((request, response) => void response.writeHead(request.url === '/events/bob' ? 403 : 200).end());
    });
    const server = serverOn(backend, env);
    // Registered after serverOn's: the policy stub closes once the server has stopped.
    after(() => policy?.close());

    it('creates pull subscriptions and refuses what does not apply to them, naming the field', async () => {
      const base = { name: 'p', jsonpath: '$' };
      const refused = async (body: object, field: string) => {
        const response = await createSubscription(server, 'alice', { ...base, ...body });
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.match(((await response.json()) as { message: string }).message, new RegExp(`^body\\.${field}`));
      };
      await refused({ delivery: 'pull', target_url: 'http://127.0.0.1:9/' }, 'target_url');
      await refused({ delivery: 'pull', auth: { type: 'header', header: { type: 'Bearer', credentials: 'x' } } }, 'auth');
      await refused({ delivery: 'pull', rate_limit: 5 }, 'rate_limit');
      await refused({}, 'target_url');
      await refused({ delivery: 'push', target_url: null }, 'target_url');
      await refused({ delivery: 'carrier pigeon' }, 'delivery');
      const uuid = await pullSubscription(server, 'alice');
      const record = (await (
        await fetch(`${server.url}/eventmatch/${uuid}`, { headers: { 'http-remote-user': 'alice' } })
      ).json()) as object;
      // PUT back as read passes; a change of delivery or a target does not.
      const put = (body: object) =>
        fetch(`${server.url}/eventmatch/${uuid}`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
          body: JSON.stringify(body),
        });
      assert.equal((await put(record)).status, 200);
      const changed = await put({ delivery: 'push', target_url: 'http://127.0.0.1:9/' });
      assert.equal(changed.status, 400);
      assert.match(((await changed.json()) as { message: string }).message, /^body\.delivery/);
      assert.equal((await put({ target_url: 'http://127.0.0.1:9/' })).status, 400);
      // The events of a push subscription are not read here; another user's pull subscription is not found.
      const push = (await (await createSubscription(server, 'alice', { ...base, target_url: 'http://127.0.0.1:9/' })).json()) as {
        uuid: string;
      };
      const notPull = await fetch(`${server.url}/eventmatch/${push.uuid}/events`, { headers: { 'http-remote-user': 'alice' } });
      assert.equal(notPull.status, 409);
      assert.equal(((await notPull.json()) as { code?: string; message: string }).message.includes('push'), true);
      const other = await fetch(`${server.url}/eventmatch/${uuid}/events`, { headers: { 'http-remote-user': 'mallory' } });
      assert.equal(other.status, 404);
      for (const query of ['?after=abc', '?after=-1', '?limit=0', '?limit=1001', '?wait=61', '?wait=x']) {
        const bad = await fetch(`${server.url}/eventmatch/${uuid}/events${query}`, { headers: { 'http-remote-user': 'alice' } });
        assert.equal(bad.status, 400, query);
        const name = query.slice(1).split('=')[0]!;
        assert.match(((await bad.json()) as { message: string }).message, new RegExp(`querystring\\.${name}`), query);
      }
    });

    it('reads the allowed events in order, with limit and next; the denied user reads none', async () => {
      const alice = await pullSubscription(server, 'alice', { team: 'x' });
      const bob = await pullSubscription(server, 'bob');
      for (const id of ['r1', 'r2', 'r3']) await receive(server, event(id));
      await eventually(async () => (await pull(server, 'alice', alice)).events.length === 3, 'three events readable');
      // In the order they became readable: each event's policy answer may come back before the
      // one of an event received earlier.
      const all = (await pull(server, 'alice', alice)).events.map((e) => e.event.id);
      assert.deepEqual([...all].sort(), ['r1', 'r2', 'r3']);
      const first = await pull(server, 'alice', alice, '?limit=2');
      assert.deepEqual(
        first.events.map((e) => e.event.id),
        all.slice(0, 2),
      );
      // The producer's event, with the subscription's extensions.
      assert.equal(first.events[0]!.event.team, 'x');
      assert.deepEqual(first.events[0]!.event.data, { n: 1.5 });
      assert.equal(first.next, first.events[1]!.cursor);
      const rest = await pull(server, 'alice', alice, `?after=${first.next}`);
      assert.deepEqual(
        rest.events.map((e) => e.event.id),
        all.slice(2),
      );
      const none = await pull(server, 'alice', alice, `?after=${rest.next}`);
      assert.deepEqual(none, { events: [], next: rest.next });
      // Bob's policy denies: his matches are denied, never readable.
      await eventually(async () => (await history(server, 'bob', bob)).filter((d) => d.state === 'denied').length === 3, 'bob denied');
      assert.deepEqual((await pull(server, 'bob', bob)).events, []);
    });

    it('acknowledges by reading on: delivered, one attempt of stage pull; pending until then; still readable', async () => {
      const uuid = await pullSubscription(server, 'carol');
      for (const id of ['a1', 'a2']) await receive(server, event(id));
      await eventually(async () => (await pull(server, 'carol', uuid)).events.length === 2, 'two readable');
      const read = await pull(server, 'carol', uuid);
      assert.deepEqual(
        (await history(server, 'carol', uuid)).map((d) => d.state),
        ['pending', 'pending'],
      );
      await pull(server, 'carol', uuid, `?after=${read.events[0]!.cursor}`);
      const states = new Map((await history(server, 'carol', uuid)).map((d) => [d.elm, d]));
      assert.equal(states.get(read.events[0]!.elm)!.state, 'delivered');
      assert.deepEqual(
        states.get(read.events[0]!.elm)!.attempts.map((a) => a.stage),
        ['pull'],
      );
      assert.equal(states.get(read.events[1]!.elm)!.state, 'pending');
      // Acknowledged or not, still readable by cursor.
      assert.equal((await pull(server, 'carol', uuid)).events.length, 2);
      // What readers asked the database is counted, by operation.
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      for (const operation of ['lookup', 'read', 'acknowledge'])
        assert.match(metrics, new RegExp(`^notifications_pull_database_operations_total\\{operation="${operation}"\\} [1-9]`, 'm'));
    });

    it('a stream reads once per event: woken once per commit (on PostgreSQL by the announcement alone)', async () => {
      const uuid = await pullSubscription(server, 'frank');
      const reads = async () => {
        const text = await (await fetch(`${server.url}/metrics`)).text();
        return Number(/^notifications_pull_database_operations_total\{operation="read"\} (\d+)$/m.exec(text)![1]);
      };
      const stream = await EventStreamReader.open(`${server.url}/eventmatch/${uuid}/events/stream`, { 'http-remote-user': 'frank' });
      try {
        await waitersAre(server, 1);
        const before = await reads();
        // The second commit's wake comes after every wake of the first: a second wake of the first would be counted by then.
        for (const id of ['once-1', 'once-2']) {
          await receive(server, event(id));
          assert.equal(JSON.parse((await stream.nextEvent(10_000)).data).id, id);
        }
        assert.equal((await reads()) - before, 2, 'one read for each event');
      } finally {
        stream.close();
      }
    });

    it('a long poll returns within a second of an event, and empty once its wait is over', async () => {
      const uuid = await pullSubscription(server, 'dave');
      let started = Date.now();
      const empty = await pull(server, 'dave', uuid, '?wait=1');
      assert.deepEqual(empty, { events: [], next: '0' });
      assert.ok(Date.now() - started >= 950, `waited ${Date.now() - started} ms`);
      const waiting = pull(server, 'dave', uuid, '?wait=30');
      await waitersAre(server, 1);
      started = Date.now();
      await receive(server, event('w1'));
      const woken = await waiting;
      const took = Date.now() - started;
      assert.deepEqual(
        woken.events.map((e) => e.event.id),
        ['w1'],
      );
      assert.ok(took < 1000, `answered ${took} ms after the event was received`);
    });

    // Instances share PostgreSQL only: one SQLite file serves one instance.
    if (backend.name === 'postgres')
      describe('two instances', () => {
        let second: RunningServer;
        before(async () => {
          second = await startServer(env());
        });
        after(async () => {
          await second?.stop();
        });
        it('a long poll on one instance is woken by an event received by the other', async () => {
          const uuid = await pullSubscription(server, 'erin');
          // Warm: both instances know the subscription (the second by NOTIFY) before the event.
          await eventually(async () => (await pull(second, 'erin', uuid)).next === '0', 'second instance reads it');
          let answeredAt = Infinity;
          const waiting = pull(server, 'erin', uuid, '?wait=30').then((pulled) => ((answeredAt = Date.now()), pulled));
          await waitersAre(server, 1);
          await receive(second, event('x1'));
          // The second is counted from when the event became readable (seen on the other
          // instance, which does not acknowledge it), not from when it was received: asking the
          // policy and settling it take what the machine's load makes them take.
          let readableAt = Infinity;
          await eventually(async () => {
            const readable = (await pull(second, 'erin', uuid)).events.length > 0;
            if (readable) readableAt = Date.now();
            return readable;
          }, 'the event readable on the instance that received it');
          const woken = await waiting;
          assert.deepEqual(
            woken.events.map((e) => e.event.id),
            ['x1'],
          );
          const took = answeredAt - readableAt;
          assert.ok(took < 1000, `answered ${took} ms after the event became readable on the other instance`);
        });
      });
  });
}
