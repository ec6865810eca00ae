/**
 * Changes made while a delivery is under way, end to end: the built server and the admin CLI
 * as processes against one database, targets as real HTTP servers on 127.0.0.1. An event
 * purged, or a subscription deleted or disabled, while its delivery is in flight or waiting
 * for a retry must not disturb the other deliveries of the batch, nor be sent again.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, it } from 'node:test';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, reply, type StubAnswer, startStub } from '../support/http-stub.js';
import { runCli } from '../support/processes.js';
import { serverOn } from '../support/server-on.js';

/** Retries come due 1.5 s after a failure: time enough to act on a pending retry. */
const RETRY_DELAYS = '1500ms,1500ms,1500ms';

const json = (user: string) => ({ 'content-type': 'application/json', 'http-remote-user': user });

/** Holds every request until `release()`: the deliveries stay in flight meanwhile. */
function holding(): { answer: StubAnswer; held: () => number; release: () => void } {
  const held: ServerResponse[] = [];
  return {
    answer: (_request, response) => void held.push(response),
    held: () => held.length,
    release: () => {
      for (const response of held.splice(0)) response.writeHead(204).end();
    },
  };
}

/** pino's error (50) and fatal (60) lines. */
function errorLines(logs: string): string[] {
  return logs.split('\n').filter((line) => /"level":(50|60)/.test(line));
}

for (const backend of testBackends()) {
  describeOn(backend, `changes while deliveries are in flight (${backend.name})`, () => {
    const server = serverOn(
      backend,
      {
        NOTIFICATIONS_RETRY_DELAYS: RETRY_DELAYS,
        NOTIFICATIONS_TARGET_TIMEOUT: '10s',
        // Longer than any wait below: a batch whose settlement failed would stay leased past it.
        NOTIFICATIONS_LEASE: '30s',
      },
      { open: true },
    );
    const stubs: HttpStub[] = [];
    const target = async (answer?: StubAnswer) => {
      const stub = await startStub(answer);
      stubs.push(stub);
      return stub;
    };
    const cli = (...args: string[]) => runCli(['--database-url', server.database.url, ...args]);
    const matchesOfEvent = (event: string) => server.db.db.selectFrom('matches').selectAll().where('event_uuid', '=', event).execute();
    const attemptsOf = (match: string) => server.db.db.selectFrom('attempts').selectAll().where('match_uuid', '=', match).execute();

    async function subscribe(user: string, source: string, targetUrl: string): Promise<string> {
      const response = await fetch(`${server.url}/eventmatch`, {
        method: 'POST',
        headers: json(user),
        body: JSON.stringify({ name: source, jsonpath: `$[?$.source == '${source}']`, target_url: targetUrl }),
      });
      assert.equal(response.status, 200, await response.clone().text());
      return ((await response.json()) as { uuid: string }).uuid;
    }

    /** One request, so the events share a commit, a handoff and a delivery batch. */
    async function receiveBatch(events: Array<{ source: string; id: string }>): Promise<string[]> {
      const body = events.map(({ source, id }) => ({ specversion: '1.0', id, source, type: 'org.example.in-flight' }));
      const response = await fetch(`${server.url}/receive`, {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: JSON.stringify(body),
      });
      assert.equal(response.status, 200, await response.clone().text());
      const answers = (await response.json()) as Array<{ uuid: string; matches: number }>;
      assert.deepEqual(
        answers.map((a) => a.matches),
        events.map(() => 1),
      );
      return answers.map((a) => a.uuid);
    }

    // Registered after serverOn's: the targets close once the server has stopped.
    after(async () => {
      for (const stub of stubs) await stub.close();
    });

    it('eventpurge --force of an event in flight: the other event of the batch is delivered once and recorded, no error', async () => {
      const hold = holding();
      const hook = await target(hold.answer);
      await subscribe('alice', '/in-flight/purge', hook.url);
      const logsBefore = server.logs().length;
      const [purged, kept] = await receiveBatch([
        { source: '/in-flight/purge', id: 'purged-1' },
        { source: '/in-flight/purge', id: 'kept-1' },
      ]);
      await eventually(() => hold.held() === 2, 'both deliveries are in flight');

      const result = await cli('eventpurge', '--force', purged!);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, 'purged 1 event\n');
      hold.release();

      await eventually(async () => (await matchesOfEvent(kept!))[0]?.state === 'delivered', 'the other event is delivered', 10_000);
      const [row] = await matchesOfEvent(kept!);
      assert.deepEqual([row!.target_code, row!.attempts, row!.locked_by], [204, 1, null]);
      assert.deepEqual(
        (await attemptsOf(row!.uuid)).map((a) => [a.stage, a.status, a.error]),
        [['deliver', 204, null]],
      );
      assert.deepEqual(await matchesOfEvent(purged!), [], 'the purged event’s matches are gone');
      assert.equal((await server.db.db.selectFrom('events').select('uuid').where('uuid', '=', purged!).execute()).length, 0);
      // The kept row is finished and unleased with one try, the purged event's rows are gone:
      // nothing is left that could be sent again (a settlement that failed would have left the
      // row leased, to be retried when the lease runs out).
      const ids = hook.requests.map((r) => (JSON.parse(r.body) as { id: string }).id).sort();
      assert.deepEqual(ids, ['kept-1', 'purged-1']);
      assert.deepEqual(errorLines(server.logs().slice(logsBefore)), []);
    });

    it('a subscription deleted while its delivery is in flight, then its event purged: the rest of the batch is unaffected', async () => {
      const hold = holding();
      const gone = await target(hold.answer);
      const live = await target(hold.answer);
      const goneSubscription = await subscribe('bob', '/in-flight/deleted', gone.url);
      await subscribe('bob', '/in-flight/live', live.url);
      const logsBefore = server.logs().length;
      const [orphan, kept] = await receiveBatch([
        { source: '/in-flight/deleted', id: 'orphan-1' },
        { source: '/in-flight/live', id: 'live-1' },
      ]);
      await eventually(() => hold.held() === 2, 'both deliveries are in flight');

      const deleted = await fetch(`${server.url}/eventmatch/${goneSubscription}`, {
        method: 'DELETE',
        headers: { 'http-remote-user': 'bob' },
      });
      assert.equal(deleted.status, 200);
      assert.equal((await matchesOfEvent(orphan!))[0]?.state, 'cancelled', 'deleting cancels the delivery in flight');
      // Cancelled is finished: no --force needed.
      const result = await cli('eventpurge', orphan!);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, 'purged 1 event\n');
      hold.release();

      await eventually(async () => (await matchesOfEvent(kept!))[0]?.state === 'delivered', 'the other event is delivered', 10_000);
      const [row] = await matchesOfEvent(kept!);
      assert.deepEqual(
        (await attemptsOf(row!.uuid)).map((a) => [a.stage, a.status]),
        [['deliver', 204]],
      );
      assert.deepEqual(await matchesOfEvent(orphan!), []);
      // Nothing is left that could be sent again: the one row there is has finished, unleased.
      assert.equal(row!.locked_by, null);
      assert.deepEqual([gone.requests.length, live.requests.length], [1, 1]);
      assert.deepEqual(errorLines(server.logs().slice(logsBefore)), []);
    });

    for (const [how, stop] of [
      [
        'deleting',
        (uuid: string) => fetch(`${server.url}/eventmatch/${uuid}`, { method: 'DELETE', headers: { 'http-remote-user': 'carol' } }),
      ],
      [
        'disabling with PUT',
        (uuid: string) =>
          fetch(`${server.url}/eventmatch/${uuid}`, { method: 'PUT', headers: json('carol'), body: JSON.stringify({ disabled: 'now' }) }),
      ],
    ] as const) {
      it(`${how} a subscription whose delivery waits for a retry cancels the retry`, async () => {
        const hook = await target(reply(503, 'busy'));
        const source = `/in-flight/retry-${how.split(' ')[0]}`;
        const subscription = await subscribe('carol', source, hook.url);
        const [event] = await receiveBatch([{ source, id: `${how}-1` }]);
        await eventually(async () => (await matchesOfEvent(event!))[0]?.attempts === 1, 'the first try failed and a retry is scheduled');
        const [waiting] = await matchesOfEvent(event!);
        assert.equal(waiting!.state, 'deliver');
        assert.ok(waiting!.due > Date.now() * 1000, 'the retry is not due yet');

        assert.equal((await stop(subscription)).status, 200);
        assert.equal((await matchesOfEvent(event!))[0]?.state, 'cancelled', 'cancelled at once');
        // Past the time the retry was due, and then some: nothing more is sent.
        await new Promise((r) => setTimeout(r, Math.max(0, (waiting!.due - Date.now() * 1000) / 1000) + 1_500));
        assert.equal(hook.requests.length, 1);
        const [row] = await matchesOfEvent(event!);
        assert.deepEqual([row!.state, row!.attempts, row!.target_code], ['cancelled', 1, 503]);
      });
    }
  });
}
