/**
 * The policy runner against a real database and a real policy service on 127.0.0.1: one call
 * per (event, user), each answer settled as it comes, and a user whose answers are slow holding
 * back no one else.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { logEvent, pendingMatch } from '../../src/db/stores/events.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchesTable, SubscriptionRow } from '../../src/db/tables.js';
import { createPolicyClient } from '../../src/policy/policy-client.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { round, testPolicyRunner } from '../support/runners.js';
import { subscriptionRow } from '../support/subscription-row.js';

for (const backend of testBackends()) {
  describeOn(backend, `policy runner (${backend.name})`, () => {
    it("asks once per (event, user), and one user's slow answers do not delay another's", async (t) => {
      const test = await openTestDatabase(backend);
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      const service = await startStub(async (request, response) => {
        if (request.url.endsWith('/slow')) await held;
        response.writeHead(200).end();
      });
      const policy = createPolicyClient({ baseUrl: service.url, timeoutMs: 5_000 });
      t.after(async () => {
        release();
        await policy.close();
        await service.close();
        await test.close();
      });
      const subscription = async (owner: string): Promise<SubscriptionRow> => {
        const row = subscriptionRow({ owner });
        await insertSubscription(test.handle.db, test.handle.capabilities, row);
        return row;
      };
      const [slowA, slowB, quick] = [await subscription('slow'), await subscription('slow'), await subscription('quick')];
      let n = 0;
      const log = async (subscriptions: SubscriptionRow[]): Promise<MatchesTable[]> => {
        const eventUuid = randomUUID();
        const id = `e${++n}`;
        const matches = subscriptions.map((s) => pendingMatch(eventUuid, s, n));
        await logEvent(
          test.handle.db,
          { uuid: eventUuid, source: '/p', event_id: id, type: 't', spec_version: '1.0', body: JSON.stringify({ id }), received: n },
          matches,
        );
        return matches;
      };
      // The slow user's events are older than the quick user's: in due order they come first.
      for (let i = 0; i < 8; i++) await log([slowA, slowB]);
      const quickRows = [...(await log([quick])), ...(await log([quick]))];
      const runner = testPolicyRunner({ handle: test.handle }, { policy, slotsPerUser: 2, batchSize: 6 });
      // The first claim takes slow rows only (3 events of 2 rows: 3 questions, 2 asked, 1 waiting).
      // The next leaves the slow user out once it has as much waiting as running.
      for (let i = 0; i < 3; i++) await runner.intake();
      const state = async (rows: MatchesTable[]) =>
        Promise.all(
          rows.map(
            async (r) =>
              (await test.handle.db.selectFrom('matches').select('state').where('uuid', '=', r.uuid).executeTakeFirstOrThrow()).state,
          ),
        );
      await eventually(
        async () => (await state(quickRows)).every((s) => s === 'deliver'),
        "the quick user's events allowed while the slow user's calls hung",
      );
      const asked = service.requests.map((r) => r.url);
      assert.equal(asked.filter((u) => u.endsWith('/slow')).length, 2, 'no more slow calls than its slots');
      release();
      await runner.idle();
      while ((await round(runner)) > 0);
      const all = await test.handle.db.selectFrom('matches').select('state').execute();
      assert.ok(
        all.every((r) => r.state === 'deliver'),
        'all allowed in the end',
      );
      assert.equal(
        service.requests.filter((r) => r.url.endsWith('/slow')).length,
        8,
        'one call per event for the slow user, not one per subscription',
      );
    });

    it("sends the policy service the event's JSON byte for byte as logged, not parsed and written again", async (t) => {
      const test = await openTestDatabase(backend);
      const service = await startStub((_request, response) => void response.writeHead(200).end());
      const policy = createPolicyClient({ baseUrl: service.url, timeoutMs: 5_000 });
      t.after(async () => {
        await policy.close();
        await service.close();
        await test.close();
      });
      const subscription = subscriptionRow({ owner: 'alice' });
      await insertSubscription(test.handle.db, test.handle.capabilities, subscription);
      // Spacing, a key order and a number form that JSON.stringify(JSON.parse(…)) would not keep.
      const body = '{ "specversion": "1.0", "id": "e1", "type": "t", "source": "/p", "data": { "size": 1.50, "z": 1, "a": 2 } }';
      const eventUuid = randomUUID();
      const match = pendingMatch(eventUuid, subscription, 1);
      await logEvent(test.handle.db, { uuid: eventUuid, source: '/p', event_id: 'e1', type: 't', spec_version: '1.0', body, received: 1 }, [
        match,
      ]);
      const runner = testPolicyRunner({ handle: test.handle }, { policy, slotsPerUser: 1, batchSize: 1 });
      await round(runner);
      await eventually(() => service.requests.length === 1, 'the policy service asked');
      assert.equal(service.requests[0]!.url, '/events/alice');
      assert.equal(service.requests[0]!.body, body);
    });
  });
}
