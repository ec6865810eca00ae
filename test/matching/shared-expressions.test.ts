import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileJsonPath } from '../../src/jsonpath/index.js';
import { SubscriptionIndex } from '../../src/matching/subscription-index.js';

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
