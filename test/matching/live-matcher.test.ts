import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { facilityEvent } from '../support/fixtures.js';
import { subscriptionRow } from '../support/subscription-row.js';

/** One subscription, 'sub-1', whose expression matches the facility event; `changes` says what differs. */
const row = (changes: Partial<SubscriptionRow> = {}): SubscriptionRow =>
  subscriptionRow({ uuid: 'sub-1', jsonpath: "$.data[?@.mimetype == 'text/plain']", ...changes });

describe('live matcher', () => {
  const event = facilityEvent();

  it('follows writes: a disabled or deleted subscription matches nothing, a re-enabled one again', () => {
    const matcher = new LiveMatcher();
    matcher.load([row()]);
    assert.deepEqual(matcher.match(event), [{ uuid: 'sub-1', owner: 'alice', notices: false }]);
    matcher.apply({ kind: 'upsert', row: row({ disabled: 5, updated: 5 }) });
    assert.deepEqual(matcher.match(event), []);
    matcher.apply({ kind: 'upsert', row: row({ updated: 6 }) });
    assert.deepEqual(matcher.match(event), [{ uuid: 'sub-1', owner: 'alice', notices: false }]);
    matcher.apply({ kind: 'upsert', row: row({ jsonpath: "$[?$.eventType == 'other']", updated: 7 }) });
    assert.deepEqual(matcher.match(event), [], 'a changed expression replaces the old one');
    matcher.apply({ kind: 'upsert', row: row({ updated: 8 }) });
    matcher.apply({ kind: 'delete', uuid: 'sub-1' });
    assert.deepEqual(matcher.match(event), []);
    matcher.apply({ kind: 'upsert', row: row({ deleted: 9, updated: 9 }) });
    assert.deepEqual(matcher.match(event), []);
  });

  it("follows a change of notices alone, with the expression's entry kept", () => {
    const matcher = new LiveMatcher();
    matcher.load([row(), row({ uuid: 'sub-2', notices: 1 })]);
    assert.deepEqual(matcher.match(event), [
      { uuid: 'sub-1', owner: 'alice', notices: false },
      { uuid: 'sub-2', owner: 'alice', notices: true },
    ]);
    matcher.apply({ kind: 'upsert', row: row({ notices: 1, updated: 2 }) });
    matcher.apply({ kind: 'upsert', row: row({ uuid: 'sub-2', notices: 0, updated: 2 }) });
    assert.deepEqual(matcher.match(event), [
      { uuid: 'sub-1', owner: 'alice', notices: true },
      { uuid: 'sub-2', owner: 'alice', notices: false },
    ]);
    const answer = matcher.match(event)[0];
    matcher.apply({ kind: 'upsert', row: row({ notices: 1, updated: 3 }) });
    assert.equal(matcher.match(event)[0], answer, 'told the same again: the same object');
    matcher.apply({ kind: 'upsert', row: row({ notices: 0, disabled: 4, updated: 4 }) });
    matcher.apply({ kind: 'upsert', row: row({ notices: 0, updated: 5 }) });
    assert.deepEqual(
      matcher.match(event).map((m) => [m.uuid, m.notices]),
      [
        ['sub-2', false],
        ['sub-1', false],
      ],
      're-enabled: indexed afresh, with what the row says',
    );
  });

  it('reads each expression in the dialect stored with it', () => {
    const both = '$.data[*][?(@.size > 100)].name';
    const matcher = new LiveMatcher();
    matcher.load([row({ uuid: 'old', jsonpath: both, dialect: 'jsonpath2' }), row({ uuid: 'new', jsonpath: both, dialect: 'rfc9535' })]);
    assert.deepEqual(
      matcher.match(event).map((m) => m.uuid),
      ['old'],
    );
  });

  it('leaves out, and reports, a stored expression that no longer compiles; the others still match', () => {
    const unusable: string[] = [];
    const matcher = new LiveMatcher({ onUnusable: (uuid, error) => unusable.push(`${uuid}: ${String(error)}`) });
    const tooLong = `$.data[?@.name == '${'x'.repeat(3_000)}']`;
    matcher.load([row({ uuid: 'long', jsonpath: tooLong }), row({ uuid: 'fine' })]);
    assert.deepEqual(
      matcher.match(event).map((m) => m.uuid),
      ['fine'],
    );
    assert.equal(unusable.length, 1);
    assert.match(unusable[0]!, /^long: JsonPathSyntaxError: invalid JSONPath at position 2048: expected at most 2048 characters/);
    // Told of the same row again (a poll, a NOTIFY): nothing new to report.
    matcher.apply({ kind: 'upsert', row: row({ uuid: 'long', jsonpath: tooLong }) });
    assert.equal(unusable.length, 1);
    // A usable expression written over it later is matched again; an unusable one replaces a usable one.
    matcher.apply({ kind: 'upsert', row: row({ uuid: 'long', updated: 2 }) });
    matcher.apply({ kind: 'upsert', row: row({ uuid: 'fine', jsonpath: tooLong, updated: 2 }) });
    assert.deepEqual(
      matcher.match(event).map((m) => m.uuid),
      ['long'],
    );
  });
});

describe('live matcher, reloaded after changes went unheard', () => {
  const event = facilityEvent();
  const uuids = (matcher: LiveMatcher) =>
    matcher
      .match(event)
      .map((m) => m.uuid)
      .sort();

  it('takes what the table holds, forgets what it no longer does, and keeps what was written while it read', async () => {
    const matcher = new LiveMatcher();
    matcher.load([row({ uuid: 'kept' }), row({ uuid: 'deleted-meanwhile' }), row({ uuid: 'written-during-reload' })]);
    async function* pages() {
      yield [row({ uuid: 'kept' })];
      // A write this instance makes while the reload reads: the pages may be older than it.
      matcher.apply({ kind: 'upsert', row: row({ uuid: 'written-during-reload', updated: 2 }) });
      yield [row({ uuid: 'created-meanwhile' })];
    }
    const forgotten = await matcher.reload(pages());
    assert.deepEqual(forgotten, ['deleted-meanwhile']);
    assert.deepEqual(uuids(matcher), ['created-meanwhile', 'kept', 'written-during-reload']);
  });

  it('forgets nothing when the read fails part way', async () => {
    const matcher = new LiveMatcher();
    matcher.load([row({ uuid: 'a' }), row({ uuid: 'b' })]);
    async function* pages() {
      yield [row({ uuid: 'a' })];
      throw new Error('connection terminated');
    }
    await assert.rejects(matcher.reload(pages()), /connection terminated/);
    assert.deepEqual(uuids(matcher), ['a', 'b']);
  });
});

describe('live matcher, what it keeps', () => {
  const event = facilityEvent();

  it('answers each subscription with one object, the same for every event', () => {
    const matcher = new LiveMatcher();
    matcher.load([row({ uuid: 'a' }), row({ uuid: 'b' })]);
    const first = matcher.match(event);
    const again = matcher.match(event);
    assert.equal(first.length, 2);
    for (const [i, matched] of first.entries()) assert.equal(again[i], matched);
    // Told of the same rows again (a poll): nothing changes.
    matcher.load([row({ uuid: 'a' }), row({ uuid: 'b' })]);
    assert.equal(matcher.match(event)[0], first[0]);
  });

  it("matches an owner's subscription written after all of the owner's others were gone", () => {
    const matcher = new LiveMatcher();
    matcher.load([row({ uuid: 'a', owner: 'bob' })]);
    matcher.apply({ kind: 'delete', uuid: 'a' });
    matcher.load([row({ uuid: 'b', owner: 'bob' }), row({ uuid: 'c', owner: 'carol', jsonpath: '$[?@.nowhere]' })]);
    assert.deepEqual(matcher.match(event), [{ uuid: 'b', owner: 'bob', notices: false }]);
  });
});
