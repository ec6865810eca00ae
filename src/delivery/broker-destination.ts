/**
 * Message brokers: each row is published to the broker its subscription's target URL names
 * (the broker kinds of destinations/kinds.ts: `amqp://…`), through the outbound thread (broker-publisher.ts), as push
 * sends it over HTTP: the event's exact bytes with the subscription's extensions, structured
 * mode, signed with the Standard Webhooks headers as message headers, with the broker's user name
 * and password from `auth` `basic`. Each broker (scheme, host and port) is a lane.
 *
 * - Confirmed by the broker: accepted (no HTTP status: the attempt records none).
 * - Refused by the broker (credentials, no such exchange, unroutable), an address the guard
 *   denies, a URL or `auth` that cannot be used: permanent.
 * - Anything else (no connection, no confirmation in time, a nack): later, with no status, so a
 *   broker that cannot be reached makes its lane down as an HTTP origin that does not answer.
 */
import type { Keyring } from '../config/keyring.js';
import type { SubscriptionRow } from '../db/tables.js';
import { readBrokerTarget } from '../destinations/target-url.js';
import type { AttemptOutcome } from '../runners/after-attempt.js';
import { openAuth } from '../subscriptions/secret-box.js';
import { signingSecretsAt } from '../subscriptions/signing-secret.js';
import type { Clock } from '../time/clock.js';
import type { BrokerAnswer, BrokerClient } from './broker-publisher.js';
import type { Destination } from './destination.js';
import { EventBodies } from './event-body.js';

export interface BrokerDestinationOptions {
  broker: Pick<BrokerClient, 'publish'>;
  secretKey: Keyring | null;
  /** NOTIFICATIONS_SECRET_OVERLAP (µs): how long after a rotation the previous signing secret still signs. */
  secretOverlapUs: number;
  clock: Clock;
}

/** The CloudEvents structured content type, as HTTP deliveries send it. */
export const BROKER_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

export function brokerDestination(options: BrokerDestinationOptions): Destination {
  const bodies = new EventBodies();
  return {
    laneOf: (subscription) => laneOf(subscription.target_url),
    // What goes into the message, as for push.
    unchanged: (before: SubscriptionRow, after: SubscriptionRow) =>
      before.target_url === after.target_url &&
      before.auth === after.auth &&
      before.extensions === after.extensions &&
      before.signing_secret === after.signing_secret,
    async deliver({ row, event, subscription, traceparent }) {
      let answer: BrokerAnswer;
      try {
        const request = {
          url: subscription.target_url,
          auth: openAuth(subscription.auth, options.secretKey),
          body: bodies.body(event, subscription.extensions),
          contentType: BROKER_CONTENT_TYPE,
          signing: { id: row.uuid, secrets: signingSecretsAt(subscription, options.clock(), options.secretKey, options.secretOverlapUs) },
          traceparent,
        };
        answer = await options.broker.publish(request).catch((error: unknown) => notSent(error, false));
      } catch (error) {
        // Credentials or signing secret sealed with a key this instance does not have: as for push, permanent.
        answer = notSent(error, true);
      }
      return { outcome: outcomeOfPublish(answer), durationMs: answer.durationMs };
    },
  };
}

/** What a publish comes to. */
export function outcomeOfPublish(answer: BrokerAnswer): AttemptOutcome {
  const { error } = answer;
  if (error === null) return { kind: 'accepted', status: null };
  return { kind: answer.permanent ? 'permanent' : 'later', status: null, error, reason: error };
}

/** The broker's lane; a URL that does not read fails when published, in a lane of its own. */
function laneOf(url: string): string {
  try {
    return readBrokerTarget(url).lane;
  } catch {
    return `unusable:${url}`;
  }
}

function notSent(error: unknown, permanent: boolean): BrokerAnswer {
  return { error: `not sent: ${error instanceof Error ? error.message : String(error)}`, permanent, durationMs: 0 };
}
