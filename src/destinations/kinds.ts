/**
 * Every kind of destination a subscription can have, declared once: what its target URL looks
 * like, what `auth` it takes, and which Destination delivers it. The subscription checks
 * (target-url.ts, subscriptions/input.ts), the choice of destination (delivery/destination-by-kind.ts),
 * the OpenAPI descriptions, the console's help and the lists in the docs (kinds-doc.ts) are all
 * read from this table; a new kind is an entry here and a Destination that delivers it.
 */
import { amqp } from '../brokers/amqp.js';
import { mqtt } from '../brokers/mqtt.js';
import { nats } from '../brokers/nats.js';
import type { BrokerProtocol } from '../brokers/protocol.js';
import { redis } from '../brokers/redis.js';

export type AuthType = 'basic' | 'header' | 'oauth2' | 'mtls';
export const AUTH_TYPES: readonly AuthType[] = ['basic', 'header', 'oauth2', 'mtls'];

/** The Destination implementations, by the name main.ts wires each under. */
export type DestinationHandler = 'push' | 'broker' | 'pull';

export interface DestinationKind {
  /** Stable name, for the console and the docs. */
  readonly id: string;
  readonly label: string;
  /** As the subscription's `delivery` says it. */
  readonly delivery: 'push' | 'pull';
  /** The target URL schemes it is chosen by, lower case, without the colon; none for pull (no URL). */
  readonly schemes: readonly string[];
  /** The URL's shape, as messages and docs write it; null: it has no URL. */
  readonly form: string | null;
  /** What its URL must be beyond the form (a broker's also has a host and no fragment), for the docs of TARGET_URL_INVALID. */
  readonly rules: string;
  /** The `auth` types it takes besides {} (which every kind takes), each with what it is to this kind. */
  readonly auth: Readonly<Partial<Record<AuthType, string>>>;
  /** The `auth` types it takes only with some of its schemes (mtls: a certificate is presented in TLS), and those schemes. */
  readonly authSchemes?: Readonly<Partial<Record<AuthType, readonly string[]>>>;
  /** Whose URL it is, for messages: `a broker's (amqp)`. */
  readonly owner: string;
  readonly handler: DestinationHandler;
  /** Whether NOTIFICATIONS_TARGET_VALIDATION=handshake asks its targets (the CloudEvents webhook handshake is HTTP's). */
  readonly handshake: boolean;
  /** Its section of docs/delivery.md. */
  readonly section: string;
  /** A broker's protocol (brokers/): how its URL reads and how to publish to it. */
  readonly protocol?: BrokerProtocol;
}

export const WEBHOOK: DestinationKind = {
  id: 'webhook',
  label: 'Webhook (HTTP POST)',
  delivery: 'push',
  schemes: ['http', 'https'],
  form: 'https://host[:port]/path',
  rules: 'written with //, no credentials',
  auth: {
    basic: 'HTTP Basic',
    header: 'sent as "Authorization: <type> <credentials>"',
    oauth2: 'OAuth 2.0 client credentials, a token sent as "Authorization: Bearer <token>"',
    mtls: 'a client certificate presented in the TLS handshake',
  },
  authSchemes: { mtls: ['https'] },
  owner: 'an HTTP target',
  handler: 'push',
  handshake: true,
  section: '#what-a-target-receives',
};

export const PULL: DestinationKind = {
  id: 'pull',
  label: 'Pull (read from the service)',
  delivery: 'pull',
  schemes: [],
  form: null,
  rules: 'no target_url',
  auth: {},
  owner: 'a pull subscription',
  handler: 'pull',
  handshake: false,
  section: '#pull',
};

/** A broker takes its user name and password, or none (its protocol's default); no header. */
function broker(protocol: BrokerProtocol, label: string, rules: string, section: string): DestinationKind {
  return {
    id: protocol.scheme,
    label,
    delivery: 'push',
    schemes: [protocol.scheme],
    form: protocol.form,
    rules,
    auth: { basic: "the broker's user name and password" },
    owner: `a broker's (${protocol.scheme})`,
    handler: 'broker',
    handshake: false,
    section,
    protocol,
  };
}

/** In the order lists show them. TLS schemes (amqps, mqtts, rediss) are not offered yet. */
export const DESTINATION_KINDS: readonly DestinationKind[] = [
  WEBHOOK,
  broker(
    amqp,
    'AMQP 0-9-1 (RabbitMQ)',
    'the virtual host one path segment, exchange and routing_key the only query parameters, routing_key required without an exchange',
    '#what-is-published',
  ),
  broker(mqtt, 'MQTT 5 or 3.1.1', 'a topic that is not empty, has no wildcard (+ or #) and does not start with $, no query', '#mqtt'),
  broker(nats, 'NATS JetStream', 'one subject, no wildcard (* or >), no query', '#nats-jetstream'),
  broker(redis, 'Redis Streams', 'one path segment (the stream key), no query', '#redis-streams'),
  PULL,
];

const BY_SCHEME: ReadonlyMap<string, DestinationKind> = new Map(
  DESTINATION_KINDS.flatMap((kind) => kind.schemes.map((scheme) => [scheme, kind] as const)),
);

/** Every scheme a target URL may have, in list order: `http`, `https`, `amqp`, … */
export const TARGET_SCHEMES: readonly string[] = [...BY_SCHEME.keys()];

/** The kinds a push subscription's target URL may name, and those of them that are brokers. */
export const PUSH_KINDS = DESTINATION_KINDS.filter((kind) => kind.delivery === 'push');
export const BROKER_KINDS = DESTINATION_KINDS.filter((kind) => kind.protocol !== undefined);

/** The kind a target URL's scheme (the text before its first colon, in any case) names; undefined for any other. */
export function kindOfScheme(targetUrl: string): DestinationKind | undefined {
  const colon = targetUrl.indexOf(':');
  return colon < 0 ? undefined : BY_SCHEME.get(targetUrl.slice(0, colon).toLowerCase());
}

/**
 * The kind a push target URL is delivered as: one of another scheme (only a URL stored before
 * the checks of today could have one) is pushed over HTTP, and fails there as unusable.
 */
export function kindOfTarget(targetUrl: string): DestinationKind {
  return kindOfScheme(targetUrl) ?? WEBHOOK;
}

export function kindOfSubscription(subscription: { readonly delivery: string; readonly target_url: string }): DestinationKind {
  return subscription.delivery === 'pull' ? PULL : kindOfTarget(subscription.target_url);
}

/** The `auth` types a target URL's kind does not take: only these need checking when credentials and target meet. */
export function refusedAuthTypes(targetUrl: string): AuthType[] {
  return AUTH_TYPES.filter((type) => authRefusal(targetUrl, type) !== undefined);
}

/** Why `auth` of `type` cannot go with the target URL (for `body.auth.type: …`); undefined when it can. */
export function authRefusal(targetUrl: string, type: AuthType): string | undefined {
  const kind = kindOfTarget(targetUrl);
  const schemes = kind.authSchemes?.[type];
  const scheme = targetUrl.slice(0, Math.max(0, targetUrl.indexOf(':'))).toLowerCase();
  if (kind.auth[type] !== undefined && schemes !== undefined && !schemes.includes(scheme))
    return `"${type}" (${kind.auth[type]}) needs a target_url of scheme ${list(schemes, 'or')}`;
  if (kind.auth[type] !== undefined) return undefined;
  const taken = AUTH_TYPES.flatMap((each) => (kind.auth[each] === undefined ? [] : [`"${each}" (${kind.auth[each]})`]));
  return `must be ${list(taken, 'or')}, or send {} for none: the target_url is ${kind.owner}`;
}

/** `a, b or c`. */
export function list(items: readonly string[], conjunction: 'and' | 'or'): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} ${conjunction} ${items.at(-1)}`;
}
