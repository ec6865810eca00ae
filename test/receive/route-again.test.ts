/**
 * Routing a logged event again (eventretry) writes its new matches in one transaction: all of
 * them, or none. The CLI's own behaviour is tested in test/cli/event-retry.test.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { logEvent } from '../../src/db/stores/events.js';
import { routeAgain } from '../../src/receive/receive.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { systemClock } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

for (const backend of testBackends()) {
  describeOn(backend, `routing a logged event again (${backend.name})`, () => {
    it('writes none of its matches when one of them cannot be written, however many there are', async () => {
      const t = await openTestDatabase(backend);
      try {
        const { db } = t.handle;
        const eventUuid = randomUUID();
        const body = JSON.stringify({ specversion: '1.0', id: eventUuid, source: '/s', type: 't', data: {} });
        await logEvent(db, { uuid: eventUuid, source: '/s', event_id: eventUuid, type: 't', spec_version: '1.0', body, received: 1 }, []);
        // More matches than one insert statement takes, the last for a subscription the table lacks.
        const stored = Array.from({ length: 1_200 }, (_, i) =>
          subscriptionRow({ owner: `user-${String(i).padStart(4, '0')}`, jsonpath: '$.data' }),
        );
        await db.insertInto('subscriptions').values(stored).execute();
        const matcher = new LiveMatcher();
        matcher.load([...stored, subscriptionRow({ owner: 'user-9999', jsonpath: '$.data' })]);
        await assert.rejects(routeAgain(t.handle, matcher, eventUuid, systemClock()));
        const written = await db.selectFrom('matches').select('uuid').where('event_uuid', '=', eventUuid).execute();
        assert.equal(written.length, 0);
        const routed = await routeAgain(t.handle, new LiveMatcher(), randomUUID(), systemClock());
        assert.equal(routed, undefined, 'an event not in the log');
      } finally {
        await t.close();
      }
    });
  });
}
