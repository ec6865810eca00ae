/**
 * The server process on a SQLite file, and another process (this one) writing to the same file,
 * as import-pacifica and the CLI do while the server runs: a subscription inserted there, with
 * times years old, matches and is delivered to a real target; disabled there, deleted there, or
 * removed from the table there, it stops matching; a commit to the event log alone is looked at
 * without reading any subscription.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { createSqlite, type TestDatabase } from '../support/database.js';
import { eventually, type HttpStub, reply, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { eventRow } from '../support/event-row.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { syncedDatabase } from '../support/server-on.js';

/** 2019-01-01: an imported subscription's times. */
const YEARS_AGO = Date.UTC(2019, 0, 1) * 1000;
const RELOADED = 'subscriptions reloaded: they changed while another process committed to the database';

describe('the server follows other processes’ commits to its SQLite file', () => {
  let database: TestDatabase;
  let other: DatabaseHandle;
  let server: RunningServer;
  let target: HttpStub;

  before(async () => {
    database = await syncedDatabase(createSqlite);
    target = await startStub(reply(204));
    server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url });
    other = openDatabase(database.url, { create: false });
  });
  after(async () => {
    assert.equal(await server.stop(), 0, server.logs());
    await other.close();
    await target.close();
    await database.cleanup();
  });

  /** Posts a new event from `source`; resolves with the number of subscriptions it matched. */
  async function receive(source: string): Promise<number> {
    const response = await fetch(`${server.url}/receive`, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json' },
      body: JSON.stringify({ specversion: '1.0', id: randomUUID(), source, type: 'org.example.other-process' }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    return ((await response.json()) as { matches: number }).matches;
  }

  const matchesBecome = (source: string, matches: number, what: string) =>
    eventually(async () => (await receive(source)) === matches, what, 20_000);

  async function lookOutcomes(): Promise<{ unchanged: number; added: number; reloaded: number }> {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const read = (outcome: string) =>
      Number(new RegExp(`^notifications_other_process_commits_total\\{outcome="${outcome}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    return { unchanged: read('unchanged'), added: read('added'), reloaded: read('reloaded') };
  }

  const imported = (source: string): SubscriptionRow =>
    subscriptionRow({
      name: source,
      jsonpath: `$[?$.source == '${source}']`,
      target_url: `${target.url}${source}`,
      created: YEARS_AGO,
      updated: YEARS_AGO,
    });

  /** Inserted as import-pacifica does: its original times, in the file the server uses. */
  const insert = (row: SubscriptionRow) => insertSubscription(other.db, other.capabilities, row);

  const deliveredTo = (source: string) => target.requests.filter((request) => request.url === source);

  /** Waits until every match of the subscription is delivered: nothing of it is in flight any more. */
  const settled = (subscription: string) =>
    eventually(async () => {
      const states = await other.db.selectFrom('matches').select('state').where('subscription_uuid', '=', subscription).execute();
      return states.length > 0 && states.every((row) => row.state === 'delivered');
    }, 'its deliveries are recorded');

  it('a commit to the event log alone is looked at, and no subscription is read', async () => {
    const before = await lookOutcomes();
    assert.deepEqual(before, { unchanged: 0, added: 0, reloaded: 0 });
    await other.db
      .insertInto('events')
      .values(eventRow({ received: YEARS_AGO }))
      .execute();
    let now = before;
    await eventually(async () => (now = await lookOutcomes()).unchanged === 1, 'the commit is looked at');
    assert.deepEqual(now, { unchanged: 1, added: 0, reloaded: 0 });
  });

  it('a subscription inserted there with times years old matches, and its events are delivered', async () => {
    const row = imported('/imported');
    await insert(row);
    await matchesBecome('/imported', 1, 'an event matches the inserted subscription');
    await eventually(() => deliveredTo('/imported').length > 0, 'the target receives the delivery');
    const delivered = JSON.parse(deliveredTo('/imported')[0]!.body) as { source: string };
    assert.equal(delivered.source, '/imported');
    assert.equal((await lookOutcomes()).added, 1);
    assert.ok(!server.logs().includes(RELOADED), 'inserted rows are read alone, without a reload');
  });

  it('disabled there, deleted there, or removed from the table there: it stops matching once looked at', async () => {
    const [disabled, deleted, removed] = ['/disabled', '/deleted', '/removed'].map(imported);
    for (const row of [disabled!, deleted!, removed!]) await insert(row);
    for (const source of ['/disabled', '/deleted', '/removed']) await matchesBecome(source, 1, `${source} matches`);
    await settled(removed!.uuid);

    /** Makes the change, and waits until the server has reloaded the subscriptions after it. */
    const reloadedAfter = async (change: () => Promise<unknown>) => {
      const before = (await lookOutcomes()).reloaded;
      await change();
      await eventually(async () => (await lookOutcomes()).reloaded > before, 'the subscriptions are reloaded');
    };
    const now = Date.now() * 1000;
    await reloadedAfter(() =>
      other.db
        .updateTable('subscriptions')
        .set({ disabled: now, updated: now, error: 'disabled by hand' })
        .where('uuid', '=', disabled!.uuid)
        .execute(),
    );
    assert.equal(await receive('/disabled'), 0, 'the disabled subscription no longer matches');
    // As DELETE /eventmatch/{uuid} does: the row stays, for the log.
    await reloadedAfter(() =>
      other.db.updateTable('subscriptions').set({ deleted: now, updated: now }).where('uuid', '=', deleted!.uuid).execute(),
    );
    assert.equal(await receive('/deleted'), 0, 'the deleted subscription no longer matches');
    // Its rows in the log first: they refer to it. (Until the server has looked, an event it
    // matches cannot be logged: the match row would refer to a subscription that is gone.)
    await reloadedAfter(() =>
      other.write(async (tx) => {
        await tx.deleteFrom('matches').where('subscription_uuid', '=', removed!.uuid).execute();
        await tx.deleteFrom('subscriptions').where('uuid', '=', removed!.uuid).execute();
      }),
    );
    assert.equal(await receive('/removed'), 0, 'the removed subscription no longer matches');

    assert.equal(await receive('/imported'), 1, 'the others still match');
    assert.equal((await lookOutcomes()).unchanged, 1, 'each of these commits changed subscriptions');
    assert.deepEqual(errorLines(server.logs()), []);
  });
});

/** pino's error (50) and fatal (60) lines. */
function errorLines(logs: string): string[] {
  return logs.split('\n').filter((line) => /"level":(50|60)/.test(line));
}
