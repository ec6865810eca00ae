/**
 * Push over HTTP: each row is POSTed to its subscription's target URL, with the subscription's
 * credentials, its extensions added to the event, and signed with its signing secret
 * (decision.ts says what the answer comes to). Each target origin is a lane.
 */
import type { Keyring } from '../config/keyring.js';
import type { SubscriptionRow } from '../db/tables.js';
import type { Clock } from '../time/clock.js';
import { openAuth } from '../subscriptions/secret-box.js';
import { signingSecretsAt } from '../subscriptions/signing-secret.js';
import { outcomeOfResponse } from './decision.js';
import type { Destination } from './destination.js';
import { EventBodies } from './event-body.js';
import type { TargetClient, TargetResponse } from './target-client.js';

export interface PushDestinationOptions {
  target: Pick<TargetClient, 'post'>;
  secretKey: Keyring | null;
  /** NOTIFICATIONS_SECRET_OVERLAP (µs): how long after a rotation the previous signing secret still signs. */
  secretOverlapUs: number;
  clock: Clock;
}

export function pushDestination(options: PushDestinationOptions): Destination {
  const bodies = new EventBodies();
  return {
    laneOf: (subscription) => originOf(subscription.target_url),
    unchanged: (before: SubscriptionRow, after: SubscriptionRow) =>
      before.target_url === after.target_url &&
      before.auth === after.auth &&
      before.extensions === after.extensions &&
      before.signing_secret === after.signing_secret,
    async deliver({ row, event, subscription, endWithinMs, traceparent }) {
      let response: TargetResponse;
      try {
        const request = {
          url: subscription.target_url,
          auth: openAuth(subscription.auth, options.secretKey),
          body: bodies.body(event, subscription.extensions),
          signing: { id: row.uuid, secrets: signingSecretsAt(subscription, options.clock(), options.secretKey, options.secretOverlapUs) },
          endWithinMs,
          traceparent,
        };
        response = await options.target.post(request).catch((error: unknown) => notSent(error, false));
      } catch (error) {
        // The stored row cannot be sent as it is (credentials or signing secret sealed with a key this instance
        // does not have): trying again would fail the same way, so it is a permanent failure.
        response = notSent(error, true);
      }
      return { outcome: outcomeOfResponse(response), durationMs: response.durationMs };
    },
  };
}

/** The lane of a target URL; one that does not parse fails when sent, in a lane of its own. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return `unusable:${url}`;
  }
}

function notSent(error: unknown, permanent: boolean): TargetResponse {
  return {
    status: null,
    error: `not sent: ${error instanceof Error ? error.message : String(error)}`,
    permanent,
    durationMs: 0,
    bodyExcerpt: '',
  };
}
