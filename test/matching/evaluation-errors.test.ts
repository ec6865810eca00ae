/**
 * An expression that throws while matching an event: counted in /metrics once per subscription
 * and event, logged once per subscription, and the event still matches everything else.
 *
 * What throws today: json-p3 refuses to descend more than 200 levels, which an RFC 9535 filter
 * with `..` does on a document deeper than that. /receive refuses events deeper than 100
 * levels, so the deep document is given to the matcher directly.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluationErrorReporter } from '../../src/matching/evaluation-errors.js';
import { LiveMatcher } from '../../src/matching/live-matcher.js';
import { createMetrics } from '../../src/metrics/registry.js';
import { parseExposition, sample } from '../metrics/exposition.js';
import { subscriptionRow } from '../support/subscription-row.js';

function deepDocument(levels: number): Parameters<LiveMatcher['match']>[0] {
  let document: Record<string, unknown> = { x: 1 };
  for (let i = 0; i < levels; i++) document = { a: document };
  return document as Parameters<LiveMatcher['match']>[0];
}

const COUNTER = 'notifications_match_evaluation_errors_total';

function matcherReporting(remembered?: number) {
  const metrics = createMetrics();
  const logged: Array<{ uuid: string; error: string }> = [];
  const matcher = new LiveMatcher({
    onEvaluationError: evaluationErrorReporter({
      count: (subscriptions) => metrics.matchEvaluationFailed(subscriptions),
      log: (uuid, error) => logged.push({ uuid, error: String(error) }),
      ...(remembered === undefined ? {} : { remembered }),
    }),
  });
  const counted = async () => sample(parseExposition(await metrics.registry.metrics()), COUNTER);
  return { matcher, logged, counted };
}

describe('expressions that fail while matching', () => {
  it('are counted per subscription and event, logged once per subscription, and match nothing', async () => {
    const { matcher, logged, counted } = matcherReporting();
    // Two subscriptions share one failing expression (one evaluation), a third has its own.
    matcher.load([
      subscriptionRow({ uuid: 'shared-1', jsonpath: '$[?@..x]' }),
      subscriptionRow({ uuid: 'shared-2', jsonpath: '$[?@..x]' }),
      subscriptionRow({ uuid: 'own', jsonpath: '$[?!@..y]' }),
      subscriptionRow({ uuid: 'fine', jsonpath: '$.a' }),
    ]);
    assert.equal(await counted(), 0, 'the series exists before any failure');

    const deep = deepDocument(250);
    assert.deepEqual(
      matcher.match(deep).map((m) => m.uuid),
      ['fine'],
    );
    assert.equal(await counted(), 3);
    assert.deepEqual(logged.map((l) => l.uuid).sort(), ['own', 'shared-1', 'shared-2']);
    assert.match(logged[0]!.error, /recursion limit/);

    for (let i = 0; i < 5; i++)
      assert.deepEqual(
        matcher.match(deep).map((m) => m.uuid),
        ['fine'],
      );
    assert.equal(await counted(), 18, 'every failure is counted');
    assert.equal(logged.length, 3, 'each subscription is logged once, not once per event');

    assert.deepEqual(
      matcher
        .match(deepDocument(50))
        .map((m) => m.uuid)
        .sort(),
      ['fine', 'own', 'shared-1', 'shared-2'],
      'a shallower event matches',
    );
    assert.equal(await counted(), 18);
  });

  it('remember a bounded number of logged subscriptions, the earliest forgotten first', async () => {
    const { matcher, logged, counted } = matcherReporting(2);
    matcher.load([
      subscriptionRow({ uuid: 'one', jsonpath: '$[?@..x]' }),
      subscriptionRow({ uuid: 'two', jsonpath: '$[?!@..y]' }),
      subscriptionRow({ uuid: 'three', jsonpath: '$[?@..a.x]' }),
    ]);
    const deep = deepDocument(250);
    matcher.match(deep);
    assert.equal(logged.length, 3);
    // Remembering two, each of the three was forgotten by the time it failed again.
    matcher.match(deep);
    assert.equal(logged.length, 6);
    assert.equal(await counted(), 6);

    const roomy = matcherReporting(3);
    roomy.matcher.load([
      subscriptionRow({ uuid: 'one', jsonpath: '$[?@..x]' }),
      subscriptionRow({ uuid: 'two', jsonpath: '$[?!@..y]' }),
      subscriptionRow({ uuid: 'three', jsonpath: '$[?@..a.x]' }),
    ]);
    roomy.matcher.match(deep);
    roomy.matcher.match(deep);
    assert.equal(roomy.logged.length, 3);
  });
});
