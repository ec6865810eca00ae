/**
 * On PostgreSQL, rows that go back to the queue for anyone to claim are announced on the
 * schema's queue channel when they commit, so that other instances' runners, waiting idle, claim
 * them at once (server/background.ts wakes them): rows a settlement gives back, the leases an
 * instance releases at shutdown, and an event routed again (`eventretry`). A settlement that
 * gives nothing back announces nothing. Notifications come in commit order on one connection, so
 * a count that moved by exactly one after two commits says the first announced nothing.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { syncSchema } from '../../src/db/migrate.js';
import { logEvent } from '../../src/db/stores/events.js';
import { matchQueue } from '../../src/db/stores/match-queue.js';
import { releaseLeasesOf } from '../../src/db/stores/matches.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { type SubscriptionListener, startSubscriptionListener } from '../../src/db/subscription-notifications.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { routeAgain } from '../../src/receive/receive.js';
import { systemClock } from '../../src/time/clock.js';
import { createPostgres, describeOn, POSTGRES, POSTGRES_TEST_URL, type TestDatabase } from '../support/database.js';
import { eventRow } from '../support/event-row.js';
import { eventually } from '../support/http-stub.js';
import { matchRow } from '../support/match-row.js';
import { subscriptionRow } from '../support/subscription-row.js';

const HOLDER = 'instance-a';
const FAR = Number.MAX_SAFE_INTEGER;

describeOn(POSTGRES, 'the queue channel (PostgreSQL)', () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let listener: SubscriptionListener;
  let queued = 0;
  const subscription = subscriptionRow({ jsonpath: '$.data' });

  before(async () => {
    database = await createPostgres(POSTGRES_TEST_URL!);
    handle = openDatabase(database.url);
    await syncSchema(handle);
    await insertSubscription(handle.db, handle.capabilities, subscription);
    listener = startSubscriptionListener({
      url: database.url,
      applicationName: 'svc-notifications queue channel test',
      onNotify: () => undefined,
      onQueued: () => queued++,
      onListening: () => undefined,
      onLost: () => undefined,
    });
    await eventually(() => listener.listening, 'the listener is up');
  });
  after(async () => {
    await listener?.close();
    await handle?.close();
    await database?.cleanup();
  });

  /** An event with one row leased to HOLDER; the row's uuid. */
  async function leasedRow(): Promise<string> {
    const event = eventRow();
    const row = matchRow({ event_uuid: event.uuid, subscription_uuid: subscription.uuid, locked_by: HOLDER, locked_until: FAR });
    await logEvent(handle.db, event, [row]);
    return row.uuid;
  }

  const settlement = (release: string[]) => ({ changes: [], attempts: [], disable: [], release });

  it('announces rows a settlement gives back, and nothing for a settlement that gives none back', async () => {
    const before = queued;
    const row = await leasedRow();
    await matchQueue(handle).settle(HOLDER, settlement([]), 1);
    await matchQueue(handle).settle(HOLDER, settlement([row]), 1);
    await eventually(() => queued > before, 'the give-back is announced');
    assert.equal(queued, before + 1, 'one announcement: the settlement without a give-back made none');
  });

  it('announces the leases an instance releases at shutdown', async () => {
    const before = queued;
    await leasedRow();
    assert.equal(await releaseLeasesOf(handle, HOLDER), 1);
    await eventually(() => queued > before, 'the release is announced');
  });

  it('announces an event routed again (eventretry)', async () => {
    const before = queued;
    const event = eventRow({ body: JSON.stringify({ specversion: '1.0', id: 'x', source: '/s', type: 't', data: { a: 1 } }) });
    await logEvent(handle.db, event, []);
    const matcher = new LiveMatcher();
    matcher.apply({ kind: 'upsert', row: subscription });
    const routed = await routeAgain(handle, matcher, event.uuid, systemClock());
    assert.equal(routed?.matches.length, 1);
    await eventually(() => queued > before, 'the routed event is announced');
  });
});
