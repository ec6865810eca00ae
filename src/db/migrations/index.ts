import type { Migration } from 'kysely/migration';
import * as initial from './0001-initial.js';
import * as signingSecrets from './0002-signing-secrets.js';
import * as subscriptionRateLimit from './0003-subscription-rate-limit.js';
import * as subscriptionAllowedRate from './0004-subscription-allowed-rate.js';
import * as liveSubscriptionsByOwner from './0005-live-subscriptions-by-owner.js';
import * as pullDelivery from './0006-pull-delivery.js';
import * as failureRuns from './0007-failure-runs.js';
import * as eventTraceparent from './0008-event-traceparent.js';
import * as matchesPageRoom from './0009-matches-page-room.js';
import * as subscriptionNotices from './0010-subscription-notices.js';
import * as attemptsByMatch from './0011-attempts-by-match.js';

/** Every migration, in order. Names are permanent: they are recorded in the database. */
export const MIGRATIONS: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-signing-secrets': signingSecrets,
  '0003-subscription-rate-limit': subscriptionRateLimit,
  '0004-subscription-allowed-rate': subscriptionAllowedRate,
  '0005-live-subscriptions-by-owner': liveSubscriptionsByOwner,
  '0006-pull-delivery': pullDelivery,
  '0007-failure-runs': failureRuns,
  '0008-event-traceparent': eventTraceparent,
  '0009-matches-page-room': matchesPageRoom,
  '0010-subscription-notices': subscriptionNotices,
  '0011-attempts-by-match': attemptsByMatch,
};
