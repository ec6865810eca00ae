import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { compactCopy } from '../../src/matching/compact-string.js';

describe('compact copy of a string', () => {
  it('is the same text, whatever the text', () => {
    for (const text of [randomUUID(), '', 'user-1', 'ünïcødé 🚀', ['a', 'b', 'c'].join('-'), 'lone \ud800 surrogate', '\udc00']) {
      assert.equal(compactCopy(text), text);
    }
  });
});
