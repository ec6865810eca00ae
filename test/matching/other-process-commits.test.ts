/**
 * Subscriptions another process writes into the SQLite file reach the matcher: the server's
 * connection and another one on the same file, both real, and the matcher kept in step only by
 * following the other's commits (the server's own writes are not told to it here).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { syncSchema } from '../../src/db/migrate.js';
import { insertSubscription, liveSubscriptionPages, type SubscriptionChange } from '../../src/db/stores/subscriptions.js';
import { subscriptionsState } from '../../src/db/stores/subscriptions-fingerprint.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import type { OtherProcessCommitsOutcome } from '../../src/metrics/metrics.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { followOtherProcessCommits, type OtherProcessCommits } from '../../src/matching/other-process-commits.js';
import { createSqlite, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/http-stub.js';
import { eventRow } from '../support/event-row.js';
import { subscriptionRow } from '../support/subscription-row.js';

/** 2019-01-01: an imported subscription's times. */
const YEARS_AGO = Date.UTC(2019, 0, 1) * 1000;
const HOUR_US = 3_600_000_000;

interface Scene {
  /** The server's connection, which the follower asks. */
  server: DatabaseHandle;
  /** Another process's connection to the same file. */
  other: DatabaseHandle;
  matcher: LiveMatcher;
  /** Every change the follower passed on. */
  applied: SubscriptionChange[];
  outcomes: OtherProcessCommitsOutcome[];
  logged: string[];
  errors: unknown[];
  /** Subscriptions matching an event from `source`. */
  matching(source: string): string[];
  start(): Promise<void>;
}

describe('following other processes’ commits to the SQLite file', () => {
  let database: TestDatabase | undefined;
  const closing: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
    await database?.cleanup();
  });

  async function scene(): Promise<Scene> {
    database = await createSqlite();
    const server = openDatabase(database.url, { boundStatements: true });
    closing.push(() => server.close());
    await syncSchema(server);
    const other = openDatabase(database.url);
    closing.push(() => other.close());
    const matcher = new LiveMatcher();
    const applied: SubscriptionChange[] = [];
    const outcomes: OtherProcessCommitsOutcome[] = [];
    const logged: string[] = [];
    const errors: unknown[] = [];
    let follower: OtherProcessCommits | undefined;
    return {
      server,
      other,
      matcher,
      applied,
      outcomes,
      logged,
      errors,
      matching: (source) => matcher.match({ source, data: [] }).map((m) => m.uuid),
      // As the server starts: the state read, then the matcher loaded, then the follower started.
      start: async () => {
        const since = await subscriptionsState(server.db);
        for await (const page of liveSubscriptionPages(server.db)) matcher.load(page);
        follower = followOtherProcessCommits({
          db: server.db,
          since,
          matcher,
          apply: (change) => {
            applied.push(change);
            matcher.apply(change);
          },
          metrics: { otherProcessCommits: (outcome) => outcomes.push(outcome) },
          log: { info: (_details, message) => logged.push(message) },
          pollMs: 10,
          maxErrorPauseMs: 100,
          onError: (error) => errors.push(error),
        });
        closing.push(() => follower!.stop());
      },
    };
  }

  const bySource = (source: string, overrides: Partial<SubscriptionRow> = {}) =>
    subscriptionRow({ jsonpath: `$[?$.source == '${source}']`, created: YEARS_AGO, updated: YEARS_AGO, ...overrides });
  const insert = (handle: DatabaseHandle, row: SubscriptionRow) => insertSubscription(handle.db, handle.capabilities, row);
  const update = (handle: DatabaseHandle, uuid: string, set: Partial<SubscriptionRow>) =>
    handle.db.updateTable('subscriptions').set(set).where('uuid', '=', uuid).execute();
  /** A commit to the event log alone, as eventpurge or an import's log batches make. */
  const logEvent = (handle: DatabaseHandle) =>
    handle.db
      .insertInto('events')
      .values(eventRow({ received: YEARS_AGO }))
      .execute();

  it('a subscription inserted with times years old matches after the next look: only the inserted rows are read', async () => {
    const s = await scene();
    await s.start();
    const imported = bySource('/imported');
    await insert(s.other, imported);
    await eventually(() => s.matching('/imported').length === 1, 'the imported subscription matches');
    assert.deepEqual(s.matching('/imported'), [imported.uuid]);
    assert.deepEqual(s.outcomes, ['added']);
    assert.deepEqual(
      s.applied.map((c) => (c.kind === 'upsert' ? c.row : c)),
      [imported],
    );
    assert.deepEqual(s.errors, []);
  });

  it('a commit between the state read before the load and the start is followed', async () => {
    const s = await scene();
    const early = bySource('/early');
    const since = await subscriptionsState(s.server.db);
    await insert(s.other, early);
    assert.notEqual((await subscriptionsState(s.server.db)).dataVersion, since.dataVersion);
    // The scene reads the state again at its start: this one, older, is what it must start from.
    const follower = followOtherProcessCommits({
      db: s.server.db,
      since,
      matcher: s.matcher,
      apply: (change) => s.matcher.apply(change),
      metrics: { otherProcessCommits: (outcome) => s.outcomes.push(outcome) },
      log: { info: () => undefined },
      pollMs: 10,
      maxErrorPauseMs: 100,
      onError: (error) => s.errors.push(error),
    });
    closing.push(() => follower.stop());
    await eventually(() => s.matching('/early').length === 1, 'the subscription inserted before the start matches');
    assert.deepEqual(s.outcomes, ['added']);
  });

  it('disabled, deleted, and removed from the table by another process: each stops matching, through a reload', async () => {
    const s = await scene();
    const [disabled, deleted, removed, kept] = ['/disabled', '/deleted', '/removed', '/kept'].map((source) => bySource(source));
    for (const row of [disabled!, deleted!, removed!, kept!]) await insert(s.other, row);
    await s.start();
    for (const source of ['/disabled', '/deleted', '/removed', '/kept']) assert.equal(s.matching(source).length, 1, source);

    const now = Date.now() * 1000;
    await s.other.write(async (tx) => {
      await tx
        .updateTable('subscriptions')
        .set({ disabled: now, updated: now, error: 'by hand' })
        .where('uuid', '=', disabled!.uuid)
        .execute();
      await tx.updateTable('subscriptions').set({ deleted: now, updated: now }).where('uuid', '=', deleted!.uuid).execute();
      await tx.deleteFrom('subscriptions').where('uuid', '=', removed!.uuid).execute();
    });
    await eventually(
      () => ['/disabled', '/deleted', '/removed'].every((source) => s.matching(source).length === 0),
      'the three stop matching',
    );
    assert.deepEqual(s.matching('/kept'), [kept!.uuid]);
    assert.deepEqual(s.outcomes, ['reloaded']);
    assert.deepEqual(s.logged, ['subscriptions reloaded: they changed while another process committed to the database']);
    // Every row went by whole, for the delivery runner's copies; the removed one as a delete.
    const upserted = new Map(s.applied.flatMap((c) => (c.kind === 'upsert' ? [[c.row.uuid, c.row] as const] : [])));
    assert.deepEqual(upserted.get(disabled!.uuid), { ...disabled!, disabled: now, updated: now, error: 'by hand' });
    assert.deepEqual(upserted.get(deleted!.uuid), { ...deleted!, deleted: now, updated: now });
    assert.deepEqual(upserted.get(kept!.uuid), kept);
    assert.deepEqual(
      s.applied.filter((c) => c.kind === 'delete'),
      [{ kind: 'delete', uuid: removed!.uuid }],
    );
    assert.deepEqual(s.errors, []);
  });

  it('a commit that leaves the subscriptions alone is looked at, and nothing is read', async () => {
    const s = await scene();
    await insert(s.other, bySource('/before'));
    await s.start();
    await logEvent(s.other);
    await eventually(() => s.outcomes.length === 1, 'the commit is looked at');
    assert.deepEqual(s.outcomes, ['unchanged']);
    assert.deepEqual(s.applied, []);
    assert.deepEqual(s.logged, []);
    assert.deepEqual(s.errors, []);
  });

  it('this server’s own creates, with another process committing meanwhile, are read as inserted rows, without a reload', async () => {
    const s = await scene();
    await s.start();
    const own = bySource('/own');
    await insert(s.server, own);
    await logEvent(s.other);
    await eventually(() => s.outcomes.length === 1, 'the commit is looked at');
    assert.deepEqual(s.outcomes, ['added']);
    assert.deepEqual(s.matching('/own'), [own.uuid]);
  });

  it('changes that leave max(updated) where it was are seen: an edit behind a time in the future, disabling and enabling by hand', async () => {
    const s = await scene();
    // Imported with a time hours ahead (read in the wrong time zone): max(updated) stays there.
    await insert(s.other, bySource('/ahead', { updated: Date.now() * 1000 + 5 * HOUR_US }));
    const edited = bySource('/before-edit');
    await insert(s.other, edited);
    await s.start();
    assert.equal(s.matching('/before-edit').length, 1);

    await update(s.other, edited.uuid, { jsonpath: "$[?$.source == '/after-edit']", updated: YEARS_AGO + 1 });
    await eventually(() => s.matching('/after-edit').length === 1, 'the edited expression matches');
    assert.equal(s.matching('/before-edit').length, 0);
    // Disabled, then enabled again, by hand, `updated` untouched.
    await update(s.other, edited.uuid, { disabled: YEARS_AGO + 2 });
    await eventually(() => s.matching('/after-edit').length === 0, 'the disabled subscription stops matching');
    await update(s.other, edited.uuid, { disabled: null });
    await eventually(() => s.matching('/after-edit').length === 1, 'the enabled subscription matches again');
    assert.deepEqual(s.outcomes, ['reloaded', 'reloaded', 'reloaded']);
    assert.deepEqual(s.errors, []);
  });
});
