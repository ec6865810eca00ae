import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SubscriptionRow } from '../../src/db/subscriptions.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { facilityEvent } from '../support/shared.js';

const row = (changes: Partial<SubscriptionRow> = {}): SubscriptionRow => ({
  uuid: 'sub-1', owner: 'alice', name: 'n', jsonpath: "$.data[?@.mimetype == 'text/plain']", dialect: 'rfc9535',
  target_url: 'http://127.0.0.1:9/', auth: '{}', extensions: '{}', version: 'v0.1', created: 1, updated: 1,
  deleted: null, disabled: null, error: null, ...changes,
});

describe('live matcher', () => {
  const event = facilityEvent();

  it('follows writes: a disabled or deleted subscription matches nothing, a re-enabled one again', () => {
    const matcher = new LiveMatcher();
    matcher.load([row()]);
    assert.deepEqual(matcher.match(event), [{ uuid: 'sub-1', owner: 'alice' }]);
    matcher.apply({ kind: 'upsert', row: row({ disabled: 5, updated: 5 }) });
    assert.deepEqual(matcher.match(event), []);
    matcher.apply({ kind: 'upsert', row: row({ updated: 6 }) });
    assert.deepEqual(matcher.match(event), [{ uuid: 'sub-1', owner: 'alice' }]);
    matcher.apply({ kind: 'upsert', row: row({ jsonpath: "$[?$.eventType == 'other']", updated: 7 }) });
    assert.deepEqual(matcher.match(event), [], 'a changed expression replaces the old one');
    matcher.apply({ kind: 'upsert', row: row({ updated: 8 }) });
    matcher.apply({ kind: 'delete', uuid: 'sub-1' });
    assert.deepEqual(matcher.match(event), []);
    matcher.apply({ kind: 'upsert', row: row({ deleted: 9, updated: 9 }) });
    assert.deepEqual(matcher.match(event), []);
  });

  it('reads each expression in the dialect stored with it', () => {
    const both = '$.data[*][?(@.size > 100)].name';
    const matcher = new LiveMatcher();
    matcher.load([row({ uuid: 'old', jsonpath: both, dialect: 'jsonpath2' }), row({ uuid: 'new', jsonpath: both, dialect: 'rfc9535' })]);
    assert.deepEqual(matcher.match(event).map((m) => m.uuid), ['old']);
  });
});
