/**
 * Whom an operational event matches: the owner's other live subscriptions that ask for notices
 * and whose expression selects it. Pure: a matcher and rows, no database. End to end, with
 * real targets, in test/e2e/operational-events.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ownersMatches } from '../../src/receive/operational-events.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { subscriptionRow } from '../support/subscription-row.js';

const DISABLED = {
  specversion: '1.0',
  id: 'e-1',
  source: '/svc-notifications',
  type: 'svc.notifications.subscription.disabled',
  subject: 'about',
  data: { subscription: 'about', name: 'pipeline', error: 'target answered 410', disabled: '2024-01-01T00:00:00.000000' },
};

describe('operational events, whom they match', () => {
  it("matches only the owner's other subscriptions that ask for notices; data subscriptions on $ and $.data do not", () => {
    const matcher = new LiveMatcher();
    matcher.load([
      subscriptionRow({ uuid: 'about', jsonpath: '$', notices: 1 }),
      subscriptionRow({ uuid: 'everything', jsonpath: '$' }),
      subscriptionRow({ uuid: 'data', jsonpath: '$.data' }),
      subscriptionRow({ uuid: 'pull', jsonpath: '$', delivery: 'pull', target_url: '' }),
      subscriptionRow({ uuid: 'alerts', jsonpath: "$[?$.type == 'svc.notifications.subscription.disabled']", notices: 1 }),
      subscriptionRow({ uuid: 'all-notices', jsonpath: '$.data', notices: 1 }),
      subscriptionRow({ uuid: 'other-type', jsonpath: "$[?$.type == 'svc.notifications.subscription.failing']", notices: 1 }),
      subscriptionRow({ uuid: 'bobs', owner: 'bob', jsonpath: '$', notices: 1 }),
    ]);
    const matches = ownersMatches(matcher, DISABLED, 'e-uuid', { uuid: 'about', owner: 'alice' }, 7);
    assert.deepEqual(matches.map((m) => m.subscription_uuid).sort(), ['alerts', 'all-notices']);
    for (const match of matches) assert.deepEqual([match.state, match.owner, match.due], ['deliver', 'alice', 7]);
    // Data events match as before, notices or not.
    assert.deepEqual(
      matcher
        .match({ ...DISABLED, source: '/facility', type: 'data' })
        .map((m) => m.uuid)
        .sort(),
      ['about', 'all-notices', 'bobs', 'data', 'everything', 'pull'],
    );
  });
});
