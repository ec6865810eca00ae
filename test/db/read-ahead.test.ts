import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readAhead } from '../../src/db/read-ahead.js';

describe('read ahead', () => {
  it('asks for the next page as soon as one arrives, and yields them all in order', async () => {
    const asked: number[] = [];
    async function* pages() {
      for (const n of [1, 2, 3]) {
        asked.push(n);
        yield n;
      }
    }
    const seen: number[] = [];
    for await (const page of readAhead(pages())) {
      seen.push(page);
      // The page after this one is being read while this one is worked on.
      assert.deepEqual(asked, [1, 2, 3].slice(0, Math.min(page + 1, 3)));
    }
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it('throws what a read threw, also when it failed while the caller worked', async () => {
    async function* pages() {
      yield 1;
      throw new Error('connection terminated');
    }
    const seen: number[] = [];
    await assert.rejects(async () => {
      for await (const page of readAhead(pages())) {
        seen.push(page);
        // Long enough for the failed read to settle unheard (an unhandled rejection would fail the test).
        await new Promise((r) => setImmediate(r));
      }
    }, /connection terminated/);
    assert.deepEqual(seen, [1]);
  });

  it('closes the source when the caller stops early, once the read under way has ended', async () => {
    let closed = false;
    let release!: () => void;
    const second = new Promise<void>((r) => (release = r));
    async function* pages() {
      try {
        yield 1;
        await second;
        yield 2;
        yield 3;
      } finally {
        closed = true;
      }
    }
    for await (const page of readAhead(pages())) {
      assert.equal(page, 1);
      break;
    }
    assert.equal(closed, false, 'the read of page 2 is still under way');
    release();
    await new Promise((r) => setImmediate(r));
    assert.equal(closed, true);
  });
});
