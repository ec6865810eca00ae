import assert from 'node:assert/strict';
import { it } from 'node:test';
import { batchedOperation } from '../../src/db/batched-write.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

const row = (n: number): SubscriptionRow =>
  subscriptionRow({ uuid: `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`, name: `s${n}`, jsonpath: '$.a' });

for (const backend of testBackends()) {
  describeOn(backend, `batched write (${backend.name})`, () => {
    it('writes the items of one turn in one call, and answers each with its own result', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const calls: number[] = [];
        // One owner with a limit of two: the third item's own result is a refusal.
        const insert = batchedOperation(handle, 'createSubscriptions', (rows: readonly SubscriptionRow[]) => {
          calls.push(rows.length);
          return { rows, most: 2 };
        });
        assert.deepEqual(await Promise.all([1, 2, 3].map((n) => insert(row(n)))), [true, true, false]);
        assert.deepEqual(calls, [3]);
        assert.deepEqual(
          (await handle.db.selectFrom('subscriptions').select('name').orderBy('name').execute()).map((r) => r.name),
          ['s1', 's2'],
        );
      } finally {
        await close();
      }
    });

    it('gives one call at most maxBatch items, and the rest to the calls after it', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const calls: number[] = [];
        const insert = batchedOperation(
          handle,
          'createSubscriptions',
          (rows: readonly SubscriptionRow[]) => {
            calls.push(rows.length);
            return { rows, most: 'off' };
          },
          { oneStatement: true, maxBatch: 2 },
        );
        assert.deepEqual(await Promise.all([1, 2, 3, 4, 5].map((n) => insert(row(n)))), [true, true, true, true, true]);
        assert.deepEqual(calls, [2, 2, 1]);
        assert.equal((await handle.db.selectFrom('subscriptions').select('uuid').execute()).length, 5);
      } finally {
        await close();
      }
    });

    it('writes the items one by one when the batch fails, so that only the failing one is refused', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const insert = batchedOperation(handle, 'createSubscriptions', (rows: readonly SubscriptionRow[]) => ({ rows, most: 'off' }));
        // The second has the first's key: the three-row insert fails as a whole.
        const outcomes = await Promise.allSettled([insert(row(1)), insert({ ...row(1), name: 'again' }), insert(row(3))]);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['fulfilled', 'rejected', 'fulfilled'],
        );
        const rows = await handle.db.selectFrom('subscriptions').select(['uuid', 'name']).orderBy('uuid').execute();
        assert.deepEqual(
          rows.map((r) => r.name),
          ['s1', 's3'],
        );
      } finally {
        await close();
      }
    });
  });
}
