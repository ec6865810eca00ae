import assert from 'node:assert/strict';
import { it } from 'node:test';
import { readAhead } from '../../src/db/read-ahead.js';
import { insertSubscription, liveSubscriptionPages } from '../../src/db/stores/subscriptions.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
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
