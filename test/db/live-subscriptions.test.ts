import assert from 'node:assert/strict';
import { it } from 'node:test';
import { insertSubscription, liveSubscriptionPages } from '../../src/db/stores/subscriptions.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
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
  });
}
