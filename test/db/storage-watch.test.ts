/**
 * The storage watch on its own, its clock in the test's hands: full from a refused write until
 * a write succeeds, reported when it begins and then at most once a minute however many writes
 * are refused, and its end reported once. Real refusals are in storage-full.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { STORAGE_FULL_REPORT_MS, StorageWatch } from '../../src/db/storage-full.js';

const sqliteFull = () => Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
const postgresFull = () => Object.assign(new Error('could not extend file'), { code: '53100' });

function watched() {
  let now = 1_000_000;
  const reports: string[] = [];
  let recoveries = 0;
  const watch = new StorageWatch(
    {
      full: (_error, refused) => reports.push(`full ${refused}`),
      recovered: (fullForMs, refused) => reports.push(`recovered after ${fullForMs} ms, ${refused} refused`),
    },
    () => now,
  );
  watch.onRecovered(() => recoveries++);
  return { watch, reports, advance: (ms: number) => (now += ms), recoveries: () => recoveries };
}

describe('storage watch', () => {
  it('is full from a refused write until a write succeeds; other failures change nothing', () => {
    const { watch, recoveries } = watched();
    assert.equal(watch.full, false);
    watch.observe(new Error('a constraint'));
    watch.observe(Object.assign(new Error('busy'), { code: 'SQLITE_BUSY' }));
    assert.equal(watch.full, false);
    watch.observe(postgresFull());
    assert.equal(watch.full, true);
    watch.observe(new Error('a constraint'));
    assert.equal(watch.full, true);
    watch.observe();
    assert.equal(watch.full, false);
    assert.equal(recoveries(), 1);
    watch.observe();
    assert.equal(recoveries(), 1, 'a success while not full is no recovery');
  });

  it('sees the refusal wrapped in another error', () => {
    const { watch } = watched();
    watch.observe(new Error('not recorded', { cause: sqliteFull() }));
    assert.equal(watch.full, true);
  });

  it('reports when it begins, then at most once a minute however many writes are refused, and once when it ends', () => {
    const { watch, reports, advance } = watched();
    for (let i = 0; i < 1_000; i++) {
      watch.observe(sqliteFull());
      advance(50);
    }
    // 1,000 refusals over 50 s: the first reported, the rest not yet.
    assert.deepEqual(reports, ['full 1']);
    advance(STORAGE_FULL_REPORT_MS - 50_000);
    watch.observe(sqliteFull());
    assert.deepEqual(reports, ['full 1', 'full 1000'], 'a minute later: the refusals since the last report');
    advance(5_000);
    watch.observe();
    assert.deepEqual(reports, ['full 1', 'full 1000', `recovered after ${50_000 + 10_000 + 5_000} ms, 1001 refused`]);
  });

  it('a storage that fills again within the minute is not reported again until the minute is over', () => {
    const { watch, reports, advance, recoveries } = watched();
    for (let i = 0; i < 10; i++) {
      watch.observe(sqliteFull());
      advance(1_000);
      watch.observe();
      advance(1_000);
    }
    assert.equal(watch.full, false);
    assert.equal(recoveries(), 10, 'each end still resumes the work that backed off');
    assert.deepEqual(reports, ['full 1', 'recovered after 1000 ms, 1 refused']);
    advance(STORAGE_FULL_REPORT_MS);
    watch.observe(sqliteFull());
    assert.deepEqual(reports.at(-1), 'full 10');
  });
});
