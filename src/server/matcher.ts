/** The live matcher as the server keeps it, and the one feed of subscription writes it follows. */
import type { FastifyBaseLogger } from 'fastify';
import type { SubscriptionChange } from '../db/stores/subscriptions.js';
import type { DeliveryRunner } from '../delivery/runner.js';
import { evaluationErrorReporter } from '../matching/evaluation-errors.js';
import { LiveMatcher } from '../matching/live-matcher.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SharedReads } from '../pull/shared-reads.js';

/** The matcher, saying which subscriptions it leaves out and which fail while matching. */
export function serverMatcher(metrics: Pick<Metrics, 'matchEvaluationFailed'>, log: FastifyBaseLogger): LiveMatcher {
  return new LiveMatcher({
    onUnusable: (uuid, error) =>
      log.warn({ subscription: uuid, error: String(error) }, 'subscription left out of matching: its stored expression no longer compiles'),
    onEvaluationError: evaluationErrorReporter({
      count: (subscriptions) => metrics.matchEvaluationFailed(subscriptions),
      log: (uuid, error) =>
        log.warn(
          { subscription: uuid, error: String(error) },
          'subscription expression failed while matching an event: taken as no match (logged once per subscription)',
        ),
    }),
  });
}

/** Every subscription write, from this instance or another: the copies kept in memory follow. */
export function followSubscriptionWrites(
  matcher: LiveMatcher,
  deliveries: DeliveryRunner,
  pullReads: SharedReads,
): (change: SubscriptionChange) => void {
  return (change) => {
    matcher.apply(change);
    deliveries.subscriptionChanged(change);
    pullReads.subscriptionChanged(change);
  };
}
