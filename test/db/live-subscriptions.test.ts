import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { it } from 'node:test';
import { readAhead } from '../../src/db/read-ahead.js';
import { loadLiveSubscriptions, loadSubscriptionsWithState } from '../../src/db/stores/live-subscriptions-load.js';
import { insertSubscription, liveSubscriptionPages, type MatchableRow } from '../../src/db/stores/subscriptions.js';
import { subscriptionsState } from '../../src/db/stores/subscriptions-fingerprint.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { describeOn, openTestDatabase, POSTGRES, SQLITE, testBackends } from '../support/database.js';
import { facilityEvent } from '../support/fixtures.js';
import { subscriptionRow } from '../support/subscription-row.js';

function subscription(n: number, deleted: number | null = null): SubscriptionRow {
  return subscriptionRow({
    uuid: `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`,
    owner: `user-${n}`,
    jsonpath: `$.n${n}`,
    auth: '{"secret":1}',
    created: n,
    updated: n,
    deleted,
    disabled: n === 3 ? 7 : null,
    notices: n === 3 ? 1 : 0,
  });
}

for (const backend of testBackends()) {
  describeOn(backend, `live subscriptions for the matcher (${backend.name})`, () => {
    it('pages through every subscription not deleted, disabled ones included, with only what matching needs', async () => {
      const t = await openTestDatabase(backend);
      try {
        for (const n of [5, 1, 4, 8, 2, 3, 7, 6])
          await insertSubscription(t.handle.db, t.handle.capabilities, subscription(n, [4, 5, 6].includes(n) ? 9 : null));
        const pages = [];
        for await (const page of liveSubscriptionPages(t.handle.db, 2)) pages.push(page);
        assert.deepEqual(
          pages.map((p) => p.map((r) => r.owner)),
          [['user-1', 'user-2'], ['user-3'], ['user-7', 'user-8']],
          'pages of two rows, the deleted ones left out: a page of deleted rows only is skipped, and paging goes on',
        );
        assert.deepEqual(pages[1]![0], {
          uuid: subscription(3).uuid,
          owner: 'user-3',
          jsonpath: '$.n3',
          dialect: 'rfc9535',
          deleted: null,
          disabled: 7,
          notices: 1,
        });
      } finally {
        await t.close();
      }
    });

    it('loads the matcher page by page, read ahead, as it would load every row at once', async () => {
      const t = await openTestDatabase(backend);
      try {
        // Expressions shared by several subscriptions, exact and not, both dialects, one that no longer compiles.
        const expressions: [string, SubscriptionRow['dialect']][] = [
          ["$.data[?@.mimetype == 'text/plain']", 'rfc9535'],
          ["$.data[?@.mimetype == 'image/png']", 'rfc9535'],
          ['$..name', 'rfc9535'],
          ['$.data[*][?(@.size > 100)].name', 'jsonpath2'],
          ["$[?$.eventType == 'other']", 'rfc9535'],
          [`$.data[?@.name == '${'x'.repeat(3_000)}']`, 'rfc9535'],
        ];
        const rows = Array.from({ length: 23 }, (_, n) => {
          const [jsonpath, dialect] = expressions[n % expressions.length]!;
          return { ...subscription(n + 1, n === 9 ? 9 : null), jsonpath, dialect, owner: `user-${n % 4}` };
        });
        for (const r of rows) await insertSubscription(t.handle.db, t.handle.capabilities, r);
        const unusable = { paged: [] as string[], whole: [] as string[] };
        const paged = new LiveMatcher({ onUnusable: (uuid) => unusable.paged.push(uuid) });
        for await (const page of readAhead(liveSubscriptionPages(t.handle.db, 4))) paged.load(page);
        const whole = new LiveMatcher({ onUnusable: (uuid) => unusable.whole.push(uuid) });
        whole.load(rows.filter((r) => r.deleted === null));
        const event = facilityEvent();
        const byUuid = (m: LiveMatcher) => m.match(event).sort((a, b) => a.uuid.localeCompare(b.uuid));
        assert.ok(byUuid(whole).length > 3);
        assert.deepEqual(byUuid(paged), byUuid(whole));
        assert.equal(unusable.paged.length, 3);
        assert.deepEqual(unusable.paged, unusable.whole);
        assert.ok(
          !byUuid(paged).some((m) => m.uuid === subscription(3).uuid || m.uuid === subscription(10).uuid),
          'disabled, deleted: left out',
        );
      } finally {
        await t.close();
      }
    });
  });
}

/**
 * Inserts `row` through a connection of another process, and returns once it has committed: a
 * write that a load under way can be made to meet at a chosen page.
 */
function insertElsewhere(url: string, row: SubscriptionRow): void {
  const program = new URL('../support/insert-subscription.js', import.meta.url);
  execFileSync(process.execPath, [program.pathname, url, JSON.stringify(row)], { stdio: 'pipe' });
}

/** Eight subscriptions: 4, 5, 6 deleted, 3 disabled; and a ninth, written once a load has begun, whose uuid comes last. */
async function startUpRows(t: Awaited<ReturnType<typeof openTestDatabase>>): Promise<SubscriptionRow> {
  for (const n of [5, 1, 4, 8, 2, 3, 7, 6])
    await insertSubscription(t.handle.db, t.handle.capabilities, subscription(n, [4, 5, 6].includes(n) ? 9 : null));
  return subscription(9);
}

const ownersOf = (pages: MatchableRow[][]) => pages.flat().map((row) => row.owner);

/** A start-up load's `load`, keeping its pages; `written` is committed by another process as the first page comes. */
function loadingWithAWriteAtFirstPage(
  url: string,
  written: SubscriptionRow,
): { load: (page: MatchableRow[]) => void; pages: MatchableRow[][] } {
  const pages: MatchableRow[][] = [];
  const load = (page: MatchableRow[]) => {
    if (pages.length === 0) insertElsewhere(url, written);
    pages.push(page);
  };
  return { load, pages };
}

describeOn(SQLITE, 'the start-up load (SQLite)', () => {
  it('loads every live row in pages of one read, and says what the table held then, as a scan of its own would', async () => {
    const t = await openTestDatabase(SQLITE);
    try {
      const written = await startUpRows(t);
      const before = await subscriptionsState(t.handle.db);
      const { load, pages } = loadingWithAWriteAtFirstPage(t.database.url, written);
      const state = await loadSubscriptionsWithState(t.handle.db, load, 2);
      assert.deepEqual(
        ownersOf(pages).sort(),
        ['user-1', 'user-2', 'user-3', 'user-7', 'user-8'],
        'deleted rows left out, a disabled one kept',
      );
      assert.deepEqual(state, before, 'of the moment the load began: the write committed meanwhile is neither loaded nor counted');
      const after = await subscriptionsState(t.handle.db);
      assert.notEqual(after.dataVersion, state.dataVersion, 'so the commit after it is followed');
      assert.equal(after.fingerprint.rows, state.fingerprint.rows + 1);
    } finally {
      await t.close();
    }
  });
});

describeOn(POSTGRES, 'the start-up load (PostgreSQL)', () => {
  it('loads every live row in pages of one statement: a write committed meanwhile is not half seen', async () => {
    const t = await openTestDatabase(POSTGRES);
    try {
      const written = await startUpRows(t);
      const { load, pages } = loadingWithAWriteAtFirstPage(t.database.url, written);
      await loadLiveSubscriptions(t.handle.db, load, 2);
      assert.deepEqual(
        ownersOf(pages).sort(),
        ['user-1', 'user-2', 'user-3', 'user-7', 'user-8'],
        'deleted rows left out, a disabled one kept',
      );
      assert.ok(
        pages.every((page) => page.length <= 2),
        'pages of two rows at most',
      );
    } finally {
      await t.close();
    }
  });
});
