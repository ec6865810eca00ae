import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { type EventRow, logEvent, type MatchRow } from '../../src/db/stores/events.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { describeOn, openTestDatabase, type TestBackend, testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { runCli, startServer } from '../support/processes.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';

const MATCHING = '$.data.project';

function event(data: unknown = { project: 1234 }): EventRow {
  const uuid = randomUUID();
  const body = { specversion: '1.0', id: uuid, source: '/facility', type: 'org.example.upload', data };
  return {
    uuid,
    source: '/facility',
    event_id: uuid,
    type: body.type,
    spec_version: '1.0',
    body: JSON.stringify(body),
    received: 1_000_000,
  };
}

function match(eventUuid: string, sub: SubscriptionRow, state: MatchRow['state']): MatchRow {
  return matchRow({
    event_uuid: eventUuid,
    subscription_uuid: sub.uuid,
    owner: sub.owner,
    state,
    policy_code: 200,
    target_code: 500,
    created: 2_000_000,
    attempts: 3,
  });
}

async function withLog(
  backend: TestBackend,
  body: (handle: DatabaseHandle, cli: (...args: string[]) => ReturnType<typeof runCli>) => Promise<void>,
) {
  const t = await openTestDatabase(backend);
  try {
    await body(t.handle, (...args) => runCli(['--database-url', t.database.url, ...args]));
  } finally {
    await t.close();
  }
}

const newMatchesOf = (handle: DatabaseHandle, eventUuid: string) =>
  handle.db
    .selectFrom('matches')
    .selectAll()
    .where('event_uuid', '=', eventUuid)
    .where('created', '>', 2_000_000)
    .orderBy('owner')
    .execute();

for (const backend of testBackends()) {
  describeOn(backend, `svc-notifications-cmd eventretry (${backend.name})`, () => {
    it("matches the event against today's live subscriptions and queues new matches for the policy, due now", async () => {
      await withLog(backend, async (handle, cli) => {
        const alice = subscriptionRow({ owner: 'alice', jsonpath: MATCHING });
        const bob = subscriptionRow({ owner: 'bob', jsonpath: MATCHING });
        const others = [
          subscriptionRow({ owner: 'carol', jsonpath: '$.data.missing' }),
          subscriptionRow({ owner: 'dave', jsonpath: MATCHING, deleted: 5 }),
          subscriptionRow({ owner: 'erin', jsonpath: MATCHING, disabled: 5, error: 'gone' }),
        ];
        for (const s of [alice, bob, ...others]) await insertSubscription(handle.db, handle.capabilities, s);
        const e = event();
        await logEvent(handle.db, e, [match(e.uuid, alice, 'failed')]);
        const before = Date.now() * 1000;
        const result = await cli('eventretry', e.uuid);
        assert.equal(result.code, 0, result.stderr);
        const rows = await newMatchesOf(handle, e.uuid);
        assert.deepEqual(result.stdout.trim().split('\n').sort(), rows.map((r) => r.uuid).sort());
        assert.deepEqual(
          rows.map((r) => [r.subscription_uuid, r.owner]),
          [
            [alice.uuid, 'alice'],
            [bob.uuid, 'bob'],
          ],
        );
        for (const row of rows) {
          assert.deepEqual(
            [row.state, row.policy_code, row.target_code, row.attempts, row.locked_by, row.locked_until],
            ['policy', null, null, 0, null, null],
          );
          assert.ok(row.due >= before && row.due <= Date.now() * 1000 && row.created === row.due, 'due now');
        }
        const old = await handle.db.selectFrom('matches').select('state').where('created', '=', 2_000_000).execute();
        assert.deepEqual(old, [{ state: 'failed' }], 'the earlier match stays as it was');
      });
    });

    it('skips a subscription whose match for the event is still in progress', async () => {
      await withLog(backend, async (handle, cli) => {
        const alice = subscriptionRow({ owner: 'alice', jsonpath: MATCHING });
        const bob = subscriptionRow({ owner: 'bob', jsonpath: MATCHING });
        for (const s of [alice, bob]) await insertSubscription(handle.db, handle.capabilities, s);
        const e = event();
        await logEvent(handle.db, e, [match(e.uuid, alice, 'deliver')]);
        const result = await cli('eventretry', e.uuid);
        assert.equal(result.code, 0, result.stderr);
        assert.match(result.stderr, new RegExp(`${alice.uuid} still has a match in progress`));
        const rows = await newMatchesOf(handle, e.uuid);
        assert.deepEqual(
          rows.map((r) => r.subscription_uuid),
          [bob.uuid],
        );
        assert.equal(result.stdout, `${rows[0]!.uuid}\n`);
      });
    });

    it('an unknown uuid is named on stderr and gives exit 1; the others are still routed', async () => {
      await withLog(backend, async (handle, cli) => {
        const alice = subscriptionRow({ owner: 'alice', jsonpath: MATCHING });
        await insertSubscription(handle.db, handle.capabilities, alice);
        const [e, unmatched] = [event(), event({ other: true })];
        for (const x of [e, unmatched]) await logEvent(handle.db, x, []);
        const unknown = randomUUID();
        const result = await cli('eventretry', unknown, e.uuid, unmatched.uuid);
        assert.equal(result.code, 1);
        assert.match(result.stderr, new RegExp(`no event ${unknown} in the log`));
        assert.match(result.stderr, new RegExp(`event ${unmatched.uuid} matches no live subscription`));
        const rows = await newMatchesOf(handle, e.uuid);
        assert.equal(rows.length, 1);
        assert.equal(result.stdout, `${rows[0]!.uuid}\n`);
      });
    });
  });

  describeOn(backend, `eventretry with the service running (${backend.name})`, () => {
    it('delivers an event to a subscription made after it arrived', async () => {
      const t = await openTestDatabase(backend);
      const target = await startStub();
      const server = await startServer({ NOTIFICATIONS_DATABASE_URL: t.database.url });
      try {
        const cloudEvent = { specversion: '1.0', id: 'retry-1', source: '/e2e', type: 'org.example.test', data: { project: 7 } };
        const received = await fetch(`${server.url}/receive`, {
          method: 'POST',
          headers: { 'content-type': 'application/cloudevents+json' },
          body: JSON.stringify(cloudEvent),
        });
        const logged = (await received.json()) as { uuid: string; matches: number };
        assert.equal(logged.matches, 0);
        const subscribed = await fetch(`${server.url}/eventmatch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
          body: JSON.stringify({ name: 'late', jsonpath: MATCHING, target_url: `${target.url}/hook` }),
        });
        assert.equal(subscribed.status, 200);
        const retried = await runCli(['--database-url', t.database.url, 'eventretry', logged.uuid]);
        assert.equal(retried.code, 0, retried.stderr);
        const elm = retried.stdout.trim();
        await eventually(() => target.requests.length === 1, 'the retried event reaches the target');
        assert.equal((JSON.parse(target.requests[0]!.body) as { id: string }).id, 'retry-1');
        await eventually(async () => {
          const shown = await runCli(['--database-url', t.database.url, 'eventget', logged.uuid]);
          return shown.stdout.includes(`    ELM ${elm} (`) && / policy 200 target 200\n$/.test(shown.stdout);
        }, 'eventget shows the delivered match');
      } finally {
        await server.stop();
        await target.close();
        await t.close();
      }
    });
  });
}
