import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileJsonPath } from '../../src/jsonpath/index.js';
import { SubscriptionIndex } from '../../src/matching/subscription-index.js';
import { Random } from '../support/random.js';

describe('subscription index: shared expressions', () => {
  it('compiles an expression once for all the subscriptions that share it, and again once none is left', () => {
    const index = new SubscriptionIndex<string>();
    let compiles = 0;
    const add = (id: string, source: string) =>
      index.setExpression(id, 'rfc9535', source, () => {
        compiles++;
        return compileJsonPath(source, 'rfc9535');
      });
    add('a', '$.x');
    add('b', '$.x');
    add('c', '$.y');
    assert.equal(compiles, 2);
    assert.deepEqual(index.match({ x: 1, y: 2 }).sort(), ['a', 'b', 'c']);
    index.delete('a');
    index.delete('b');
    add('d', '$.x');
    assert.equal(compiles, 3, 'the shared entry went with its last subscriber');
    assert.deepEqual(index.match({ x: 1 }), ['d']);
  });
});

describe('subscription index: many subscriptions of one expression', () => {
  it('keeps matching those left, whichever leave and in whatever order, and answers in groups the same', () => {
    const index = new SubscriptionIndex<number>();
    const r = new Random(29);
    const left = new Set<number>();
    for (let id = 0; id < 500; id++) {
      index.set(id, compileJsonPath(r.chance(0.8) ? '$.x' : '$.y'));
      left.add(id);
    }
    const order = [...left].sort(() => r.next() - 0.5);
    for (const [i, id] of order.entries()) {
      index.delete(id);
      left.delete(id);
      if (i % 50 !== 0) continue;
      const event = { x: 1, y: 2 };
      assert.deepEqual(
        index.match(event).sort((a, b) => a - b),
        [...left].sort((a, b) => a - b),
      );
      assert.deepEqual(index.matchGroups(event).flat().sort(), index.match(event).sort());
    }
    assert.equal(index.stats().expressions, 0);
  });
});
