import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RecentlyUsed } from '../src/recently-used.js';

describe('RecentlyUsed', () => {
  it('forgets the entry set longest ago once past its limit', () => {
    const map = new RecentlyUsed<string, number>(2);
    map.set('a', 1).set('b', 2).set('c', 3);
    assert.deepEqual(
      [...map],
      [
        ['b', 2],
        ['c', 3],
      ],
    );
  });

  it('counts an entry set again as the newest, and a read as nothing', () => {
    const map = new RecentlyUsed<string, number>(2);
    map.set('a', 1).set('b', 2);
    assert.equal(map.get('a'), 1);
    map.set('c', 3);
    assert.equal(map.has('a'), false, 'a read does not keep an entry');
    map.set('b', 20).set('d', 4);
    assert.deepEqual([...map.keys()], ['b', 'd']);
  });
});
