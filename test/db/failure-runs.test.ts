/**
 * Runs of failures in the database: attempts settled together are counted in the order they
 * ended, a success ends the run, and reaching five is reported once per run, however the
 * attempts were batched into writes.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { countRuns, endRuns, type RunAttempt } from '../../src/db/stores/failure-runs.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';

const A = '00000000-0000-0000-0000-0000000000a1';
const B = '00000000-0000-0000-0000-0000000000a2';

const failed = (subscription: string, error = 'target answered 503'): RunAttempt => ({ subscription, failed: true, error });
const succeeded = (subscription: string): RunAttempt => ({ subscription, failed: false });

for (const backend of testBackends()) {
  describeOn(backend, `runs of failures (${backend.name})`, () => {
    it('reports a run reaching five once, whether its failures come one by one or together', async () => {
      const t = await openTestDatabase(backend);
      try {
        const { db } = t.handle;
        for (let i = 1; i <= 4; i++) assert.deepEqual(await countRuns(db, [failed(A)]), [], `failure ${i}`);
        assert.deepEqual(await countRuns(db, [failed(A, 'the fifth')]), [{ subscription: A, failures: 5, error: 'the fifth' }]);
        assert.deepEqual(await countRuns(db, [failed(A)]), [], 'past five: said already');
        // Three then four in one write: from three to seven, past five in it.
        assert.deepEqual(await countRuns(db, [failed(B), failed(B), failed(B)]), []);
        assert.deepEqual(await countRuns(db, [failed(B), failed(B), failed(B), failed(B, 'last')]), [
          { subscription: B, failures: 7, error: 'last' },
        ]);
      } finally {
        await t.close();
      }
    });

    it('a success ends the run: failures before it do not count, those after it start a new one', async () => {
      const t = await openTestDatabase(backend);
      try {
        const { db } = t.handle;
        await countRuns(db, [failed(A), failed(A), failed(A), failed(A)]);
        // In one write: the success ends the four, and two failures after it start afresh.
        assert.deepEqual(await countRuns(db, [failed(A), succeeded(A), failed(A), failed(A)]), []);
        const [row] = await db.selectFrom('failure_runs').selectAll().execute();
        assert.deepEqual(row, { subscription_uuid: A, failures: 2 });
        assert.deepEqual(await countRuns(db, [failed(A), failed(A), failed(A, 'again')]), [
          { subscription: A, failures: 5, error: 'again' },
        ]);
        assert.deepEqual(await countRuns(db, [succeeded(A)]), []);
        assert.deepEqual(await db.selectFrom('failure_runs').selectAll().execute(), [], 'nothing kept while deliveries succeed');
        await countRuns(db, [failed(B)]);
        await endRuns(db, [B]);
        assert.deepEqual(await db.selectFrom('failure_runs').selectAll().execute(), []);
      } finally {
        await t.close();
      }
    });
  });
}
