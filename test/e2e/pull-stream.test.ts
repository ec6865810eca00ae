/**
 * The event stream of pull delivery end to end: the built server as a process on every
 * database, its stream read by a small Server-Sent Events reader over fetch. Events in order
 * with id, event and data (one line, even for a producer's pretty JSON), live within a second,
 * resumed after Last-Event-ID, delivered in the history once written; the waiter gone with its
 * client; SIGTERM with streams open exits at once, not at the end of its grace.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { EventStreamReader, type StreamEvent } from '../support/event-stream.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { history, pull, pullSubscription, receive, waitersAre } from '../support/pull-client.js';
import { serverOn } from '../support/server-on.js';

function event(id: string, indent?: number): string {
  return JSON.stringify(
    { specversion: '1.0', id, source: '/e2e-stream', type: 'org.example.stream', data: { n: 1, text: 'a\nb' } },
    null,
    indent,
  );
}

function open(server: RunningServer, user: string, uuid: string, query = '', headers: Record<string, string> = {}) {
  return EventStreamReader.open(`${server.url}/eventmatch/${uuid}/events/stream${query}`, { 'http-remote-user': user, ...headers });
}

const ids = (events: StreamEvent[]) => events.map((e) => (JSON.parse(e.data) as { id: string }).id);

async function states(server: RunningServer, user: string, uuid: string): Promise<Map<string, { state: string; stages: string[] }>> {
  return new Map((await history(server, user, uuid)).map((d) => [d.elm, { state: d.state, stages: d.attempts.map((a) => a.stage) }]));
}

for (const backend of testBackends()) {
  describeOn(backend, `pull event stream end to end (${backend.name})`, () => {
    let policy: HttpStub;
    const env = () => ({
      NOTIFICATIONS_DATABASE_URL: server.database.url,
      NOTIFICATIONS_POLICY_URL: policy.url,
      NOTIFICATIONS_RETRY_DELAYS: '100ms',
      NOTIFICATIONS_TARGET_TIMEOUT: '1s',
      NOTIFICATIONS_LEASE: '5s',
      NOTIFICATIONS_SHUTDOWN_GRACE: '30s',
    });

    before(async () => {
      policy = await startStub((_request, response) => void response.writeHead(200).end());
    });
    const server = serverOn(backend, env);
    // Registered after serverOn's: the policy stub closes once the server has stopped.
    after(() => policy?.close());

    it('answers as the events route does before it streams: 404 for others, 409 for push, 400 naming the parameter or header', async () => {
      const uuid = await pullSubscription(server, 'alice');
      const answer = async (stream: Promise<EventStreamReader>) => {
        const answered = await stream;
        return { status: answered.status, ...(await answered.json<{ code: string; message: string }>()) };
      };
      const other = await answer(open(server, 'mallory', uuid));
      assert.deepEqual([other.status, other.code], [404, 'SUBSCRIPTION_NOT_FOUND']);
      const created = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
        body: JSON.stringify({ name: 'push', jsonpath: '$', target_url: 'http://127.0.0.1:9/' }),
      });
      const push = (await created.json()) as { uuid: string };
      const notPull = await answer(open(server, 'alice', push.uuid));
      assert.deepEqual([notPull.status, notPull.code], [409, 'SUBSCRIPTION_NOT_PULL']);
      const badAfter = await answer(open(server, 'alice', uuid, '?after=abc'));
      assert.equal(badAfter.status, 400);
      assert.match(badAfter.message, /^querystring\.after/);
      const badHeader = await answer(open(server, 'alice', uuid, '', { 'last-event-id': '-1' }));
      assert.deepEqual([badHeader.status, badHeader.code], [400, 'FIELD_INVALID']);
      assert.match(badHeader.message, /^last-event-id/);
      const unknown = await answer(open(server, 'alice', uuid, '?wait=5'));
      assert.equal(unknown.status, 400);
      assert.match(unknown.message, /wait/);
      const anonymous = await EventStreamReader.open(`${server.url}/eventmatch/${uuid}/events/stream`, {});
      assert.equal(anonymous.status, 401);
      await anonymous.json();
      // HEAD: the stream's headers, and no stream.
      const head = await fetch(`${server.url}/eventmatch/${uuid}/events/stream`, {
        method: 'HEAD',
        headers: { 'http-remote-user': 'alice' },
      });
      assert.equal(head.status, 200);
      assert.match(head.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.equal(await head.text(), '');
    });

    it('streams the events in order (id the cursor, event cloudevent, data the event on one line), then live within a second', async () => {
      const uuid = await pullSubscription(server, 'bob', { team: 'x' });
      await receive(server, event('s1'));
      await receive(server, event('s2', 2)); // pretty JSON: line breaks between tokens
      await eventually(async () => (await pull(server, 'bob', uuid)).events.length === 2, 'two readable');
      const expected = (await pull(server, 'bob', uuid)).events;
      const stream = await open(server, 'bob', uuid);
      try {
        assert.equal(stream.status, 200);
        assert.match(String(stream.response.headers['content-type']), /^text\/event-stream/);
        assert.ok(stream.response.headers['x-request-id']);
        const got = [await stream.nextEvent(), await stream.nextEvent()];
        assert.deepEqual(
          got.map((e) => e.id),
          expected.map((e) => e.cursor),
        );
        assert.deepEqual(
          got.map((e) => e.event),
          ['cloudevent', 'cloudevent'],
        );
        for (const [i, streamed] of got.entries()) {
          assert.equal(streamed.lines.filter((line) => line.startsWith('data:')).length, 1, 'data on one line');
          // The same event as the events route gives: the producer's, with the extensions.
          assert.deepEqual(JSON.parse(streamed.data), expected[i]!.event);
        }
        assert.equal((JSON.parse(got[1]!.data) as { team: string }).team, 'x');
        assert.equal((JSON.parse(got[1]!.data) as { data: { text: string } }).data.text, 'a\nb');

        await waitersAre(server, 1);
        const started = Date.now();
        await receive(server, event('s3'));
        const live = await stream.nextEvent(5_000);
        const took = Date.now() - started;
        assert.deepEqual(ids([live]), ['s3']);
        assert.ok(took < 1000, `streamed ${took} ms after the event was received`);
        // Written, so delivered: one attempt of stage pull each.
        await eventually(
          async () => [...(await states(server, 'bob', uuid)).values()].every((d) => d.state === 'delivered'),
          'all delivered',
        );
        assert.deepEqual(
          [...(await states(server, 'bob', uuid)).values()].map((d) => d.stages),
          [['pull'], ['pull'], ['pull']],
        );
      } finally {
        stream.close();
      }
      // The client hung up: its waiter is gone.
      await waitersAre(server, 0);
    });

    it("resumes after Last-Event-ID (over the URL's after), or after: nothing repeated, and what it passed over is delivered", async () => {
      const uuid = await pullSubscription(server, 'carol');
      for (const id of ['r1', 'r2', 'r3']) await receive(server, event(id));
      await eventually(async () => (await pull(server, 'carol', uuid)).events.length === 3, 'three readable');
      // In the order they became readable, which need not be the order they were received.
      const [r1, r2, r3] = (await pull(server, 'carol', uuid)).events;
      assert.deepEqual(
        [...(await states(server, 'carol', uuid)).values()].map((d) => d.state),
        ['pending', 'pending', 'pending'],
      );
      // An EventSource reconnecting sends the URL it began with and the last id it received.
      const resumed = await open(server, 'carol', uuid, '?after=0', { 'last-event-id': r2!.cursor });
      try {
        const first = await resumed.nextEvent();
        assert.deepEqual([first.id, ...ids([first])], [r3!.cursor, r3!.event.id]);
        await receive(server, event('r4'));
        assert.deepEqual(ids([await resumed.nextEvent()]), ['r4']);
      } finally {
        resumed.close();
      }
      // Resuming after r2 says r1 and r2 arrived; r3 and r4 were written.
      await eventually(
        async () => [...(await states(server, 'carol', uuid)).values()].every((d) => d.state === 'delivered'),
        'all delivered',
      );
      const fromAfter = await open(server, 'carol', uuid, `?after=${r1!.cursor}`);
      try {
        assert.deepEqual(ids([await fromAfter.nextEvent(), await fromAfter.nextEvent(), await fromAfter.nextEvent()]), [
          r2!.event.id,
          r3!.event.id,
          'r4',
        ]);
      } finally {
        fromAfter.close();
      }
      await waitersAre(server, 0);
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
        it('a stream on one instance carries, within a second, an event received by the other', async () => {
          const uuid = await pullSubscription(server, 'erin');
          // Warm: the second instance knows the subscription (by NOTIFY) before the event.
          await eventually(async () => (await pull(second, 'erin', uuid)).next === '0', 'second instance reads it');
          const stream = await open(server, 'erin', uuid);
          try {
            await waitersAre(server, 1);
            const started = Date.now();
            await receive(second, event('x1'));
            const live = await stream.nextEvent(5_000);
            const took = Date.now() - started;
            assert.deepEqual(ids([live]), ['x1']);
            assert.ok(took < 1000, `streamed ${took} ms after the other instance received the event`);
          } finally {
            stream.close();
          }
          await waitersAre(server, 0);
        });
      });

    it('exits at once on SIGTERM with streams open, ending them, well within its grace', async (t) => {
      const own = await startServer(env());
      try {
        const uuid = await pullSubscription(own, 'dave');
        const streams = await Promise.all(Array.from({ length: 10 }, () => open(own, 'dave', uuid)));
        await waitersAre(own, 10);
        const started = Date.now();
        const code = await own.stop('SIGTERM');
        const took = Date.now() - started;
        t.diagnostic(`exited ${took} ms after SIGTERM with ten streams open`);
        assert.equal(code, 0, own.logs());
        assert.ok(took < 3_000, `exited ${took} ms after SIGTERM with ten streams open (grace 30 s)`);
        for (const stream of streams) await stream.end(1_000);
        assert.doesNotMatch(own.logs(), /longer than its grace/);
      } finally {
        await own.stop();
      }
    });
  });
}
