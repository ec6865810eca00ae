/**
 * The storage watch on its own, its clock in the test's hands: full from a refused write until
 * a write that began after it and needs space succeeds, reported when it begins and then at
 * most once a minute however many writes are refused, and its end reported once. Real
 * refusals are in storage-full.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { STORAGE_FULL_REPORT_MS, StorageWatch, type WriteStart } from '../../src/db/storage-full.js';

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
  return {
    watch,
    reports,
    advance: (ms: number) => (now += ms),
    recoveries: () => recoveries,
    /** A write that begins and ends at once: `error` when it failed. */
    write: (error?: unknown) => watch.observe(watch.begin(), error),
  };
}

describe('storage watch', () => {
  it('is full from a refused write until a write succeeds; other failures change nothing', () => {
    const { watch, recoveries, write } = watched();
    assert.equal(watch.full, false);
    write(new Error('a constraint'));
    write(Object.assign(new Error('busy'), { code: 'SQLITE_BUSY' }));
    assert.equal(watch.full, false);
    write(postgresFull());
    assert.equal(watch.full, true);
    write(new Error('a constraint'));
    assert.equal(watch.full, true);
    write();
    assert.equal(watch.full, false);
    assert.equal(recoveries(), 1);
    write();
    assert.equal(recoveries(), 1, 'a success while not full is no recovery');
  });

  it('sees the refusal wrapped in another error', () => {
    const { watch, write } = watched();
    write(new Error('not recorded', { cause: sqliteFull() }));
    assert.equal(watch.full, true);
  });

  it('reports when it begins, then at most once a minute however many writes are refused, and once when it ends', () => {
    const { reports, advance, write } = watched();
    for (let i = 0; i < 1_000; i++) {
      write(sqliteFull());
      advance(50);
    }
    // 1,000 refusals over 50 s: the first reported, the rest not yet.
    assert.deepEqual(reports, ['full 1']);
    advance(STORAGE_FULL_REPORT_MS - 50_000);
    write(sqliteFull());
    assert.deepEqual(reports, ['full 1', 'full 1000'], 'a minute later: the refusals since the last report');
    advance(5_000);
    write();
    assert.deepEqual(reports, ['full 1', 'full 1000', `recovered after ${50_000 + 10_000 + 5_000} ms, 1001 refused`]);
  });

  it('a storage that fills again within the minute is not reported again until the minute is over', () => {
    const { watch, reports, advance, recoveries, write } = watched();
    for (let i = 0; i < 10; i++) {
      write(sqliteFull());
      advance(1_000);
      write();
      advance(1_000);
    }
    assert.equal(watch.full, false);
    assert.equal(recoveries(), 10, 'each end still resumes the work that backed off');
    assert.deepEqual(reports, ['full 1', 'recovered after 1000 ms, 1 refused']);
    advance(STORAGE_FULL_REPORT_MS);
    write(sqliteFull());
    assert.deepEqual(reports.at(-1), 'full 10');
  });

  it('ends only at the success of a write begun after the refusal: not one under way when it came', () => {
    const { watch, reports, advance, recoveries } = watched();
    const before: WriteStart[] = [watch.begin(), watch.begin(), watch.begin()];
    watch.observe(before[0]!, sqliteFull());
    // The others of the moment succeed (their answers came with the refusal's): still full.
    watch.observe(before[1]!);
    advance(87_000);
    watch.observe(before[2]!);
    assert.equal(watch.full, true);
    assert.deepEqual(reports, ['full 1']);
    assert.equal(recoveries(), 0);
    const after = watch.begin();
    advance(1_000);
    watch.observe(after);
    assert.equal(watch.full, false);
    assert.deepEqual(reports, ['full 1', 'recovered after 88000 ms, 1 refused']);
  });

  it('a write that may change nothing ends nothing, whenever it began', () => {
    const { watch, reports, write } = watched();
    write(sqliteFull());
    watch.observe(watch.begin({ mayChangeNothing: true }));
    assert.equal(watch.full, true);
    assert.deepEqual(reports, ['full 1']);
    write();
    assert.equal(watch.full, false);
  });

  it('a write begun in one episode ends no later one', () => {
    const { watch, reports, advance, write } = watched();
    write(sqliteFull());
    const during = watch.begin();
    write();
    advance(STORAGE_FULL_REPORT_MS);
    write(sqliteFull());
    // Begun while full before, it ends its own episode, not this one.
    watch.observe(during);
    assert.equal(watch.full, true);
    assert.deepEqual(reports, ['full 1', 'recovered after 0 ms, 1 refused', 'full 1']);
  });

  it('a refused write counts, whenever it began', () => {
    const { watch, reports, advance, write } = watched();
    const before = watch.begin();
    write(sqliteFull());
    advance(1_000);
    watch.observe(before, postgresFull());
    write();
    assert.deepEqual(reports, ['full 1', 'recovered after 1000 ms, 2 refused']);
  });
});
