/**
 * NOTIFICATIONS_RETENTION in the built server process, on every database: finished events go
 * once older than the retention, with their matches and attempts; an event with a delivery
 * still pending stays; /metrics counts the purge; `off` purges nothing. Two servers side by
 * side, each on its own database: one with a two-second retention, one with `off`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { parseExposition, sample } from '../metrics/exposition.js';
import { describeOn, type TestDatabase, testBackends } from '../support/database.js';
import { eventually, type HttpStub, reply, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const RETENTION_MS = 2_000;
/** The shortest time between purge rounds (runners/retention.ts), and a margin for a busy machine. */
const ROUND_MS = 1_000 + 500;
const YEAR_2020_US = Date.UTC(2020, 0, 1) * 1000;

interface Instance {
  database: TestDatabase;
  handle: DatabaseHandle;
  server: RunningServer;
  /** Logged directly, received in 2020, no match: older than any retention, the 30-day default included. */
  ancient: string;
  /** Uuids of the events received through /receive, by name. */
  events: Record<'delivered' | 'nothing' | 'pending', string>;
  sentAt: number;
}

async function purgedTotals(server: RunningServer): Promise<[number | undefined, number | undefined]> {
  const samples = parseExposition(await (await fetch(`${server.url}/metrics`)).text());
  return [sample(samples, 'notifications_events_purged_total'), sample(samples, 'notifications_matches_purged_total')];
}

const eventsIn = async (handle: DatabaseHandle) =>
  new Set((await handle.db.selectFrom('events').select('uuid').execute()).map((r) => r.uuid));
const matchesOf = (handle: DatabaseHandle, eventUuid: string) =>
  handle.db.selectFrom('matches').selectAll().where('event_uuid', '=', eventUuid).execute();
const attemptsOf = (handle: DatabaseHandle, matchUuids: string[]) =>
  matchUuids.length === 0
    ? Promise.resolve([])
    : handle.db.selectFrom('attempts').selectAll().where('match_uuid', 'in', matchUuids).execute();

for (const backend of testBackends()) {
  describeOn(backend, `retention in the server (${backend.name})`, () => {
    let ok: HttpStub;
    let busy: HttpStub;
    let purging: Instance;
    let keeping: Instance;

    async function start(retention: string): Promise<Instance> {
      const database = await syncedDatabase(backend);
      const handle = openDatabase(database.url);
      const ancient = randomUUID();
      await handle.db
        .insertInto('events')
        .values({
          uuid: ancient,
          source: '/retention',
          event_id: ancient,
          type: 'retention.ancient',
          spec_version: '1.0',
          body: '{}',
          received: YEAR_2020_US,
        })
        .execute();
      const server = await startServer({
        NOTIFICATIONS_DATABASE_URL: database.url,
        NOTIFICATIONS_RETENTION: retention,
        // One retry, an hour after the first 503: the pending delivery stays pending throughout.
        NOTIFICATIONS_RETRY_DELAYS: '1h',
      });
      const subscribe = async (user: string, type: string, target: HttpStub) => {
        const response = await fetch(`${server.url}/eventmatch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'http-remote-user': user },
          body: JSON.stringify({ name: type, jsonpath: `$[?$.type == '${type}']`, target_url: `${target.url}/hook` }),
        });
        assert.equal(response.status, 200, await response.text());
      };
      await subscribe('alice', 'retention.delivered', ok);
      await subscribe('bob', 'retention.pending', busy);
      const sentAt = Date.now();
      const receive = async (type: string) => {
        const response = await fetch(`${server.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json' },
          body: JSON.stringify({ specversion: '1.0', id: randomUUID(), source: '/retention', type }),
        });
        assert.equal(response.status, 200);
        return ((await response.json()) as { uuid: string }).uuid;
      };
      const events = {
        delivered: await receive('retention.delivered'),
        nothing: await receive('retention.nothing'),
        pending: await receive('retention.pending'),
      };
      return { database, handle, server, ancient, events, sentAt };
    }

    before(async () => {
      ok = await startStub(reply(204));
      busy = await startStub(reply(503, 'busy'));
      [purging, keeping] = await Promise.all([start(`${RETENTION_MS / 1000}s`), start('off')]);
    });
    after(async () => {
      for (const instance of [purging, keeping]) {
        if (!instance) continue;
        assert.equal(await instance.server.stop(), 0);
        await instance.handle.close();
        await instance.database.cleanup();
      }
      await ok.close();
      await busy.close();
    });

    it('purges finished events older than the retention with their matches and attempts, keeps a pending one, and counts them', async () => {
      const { handle, events } = purging;
      const [delivered] = await matchesOf(handle, events.delivered);
      const [pending] = await matchesOf(handle, events.pending);
      assert.ok(delivered && pending);
      assert.deepEqual(await matchesOf(handle, events.nothing), [], 'an event that matched nothing');
      await eventually(
        async () => (await attemptsOf(handle, [delivered.uuid, pending.uuid])).length === 2,
        'the delivery and the refused attempt are recorded',
      );
      assert.equal((await matchesOf(handle, events.delivered))[0]?.state, 'delivered');
      assert.equal((await matchesOf(handle, events.pending))[0]?.state, 'deliver', 'the 503 left the delivery waiting for its retry');

      await eventually(
        async () => {
          const left = await eventsIn(handle);
          const gone = !left.has(events.delivered);
          assert.ok(!gone || Date.now() - purging.sentAt >= RETENTION_MS, 'purged before the retention had passed');
          return gone && !left.has(events.nothing) && !left.has(purging.ancient);
        },
        'the finished events are purged',
        RETENTION_MS + 5 * ROUND_MS,
      );
      assert.deepEqual(await matchesOf(handle, events.delivered), [], 'the delivered match went with its event');
      assert.deepEqual(await attemptsOf(handle, [delivered.uuid]), [], 'and its attempt');

      // The pending event is as old as the others: a round or two more must not take it either.
      await sleep(ROUND_MS);
      assert.ok((await eventsIn(handle)).has(events.pending), 'the event with a pending delivery is kept');
      assert.equal((await matchesOf(handle, events.pending)).length, 1);
      assert.equal((await attemptsOf(handle, [pending.uuid])).length, 1);
      assert.equal(busy.requests.filter((r) => r.url === '/hook').length, 2, 'one 503 from each server, no retry yet');
      assert.deepEqual(
        await purgedTotals(purging.server),
        [3, 1],
        'three events (delivered, matched nothing, from 2020) and the one match',
      );
    });

    it('with off, keeps every event, however old', async () => {
      const { handle, events } = keeping;
      // By now the other server has purged its copies of these (the test above waited for it).
      await eventually(async () => !(await eventsIn(purging.handle)).has(purging.events.nothing), 'the purging server has purged');
      await sleep(ROUND_MS);
      assert.deepEqual(await eventsIn(handle), new Set([keeping.ancient, events.delivered, events.nothing, events.pending]));
      assert.equal((await matchesOf(handle, events.delivered))[0]?.state, 'delivered');
      assert.deepEqual(await purgedTotals(keeping.server), [0, 0]);
    });
  });
}
