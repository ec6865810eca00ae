/**
 * Every field of a subscription, declared once, in the order records give them: how a client
 * writes it (its request schema) or that the service sets it, and how the record shows it. The
 * request bodies of create and PUT, the record's schema and type, RECORD_FIELDS and the console's
 * types are all read from here (see docs/architecture.md, "Adding a field").
 *
 * The module imports nothing but TypeBox and the destination kinds' texts: the console's build
 * reads its declaration (.d.ts) too.
 * Schemas are written to validate as Ajv validates them for Fastify; a nullable field is
 * `type: [T, 'null']` (nullable() below), not anyOf, so that a wrong type is one error naming
 * both ("an integer or null").
 */
import { type Static, type TSchema, Type } from 'typebox';
import { authDescription, targetUrlDescription } from '../destinations/kinds-doc.js';

/**
 * Bounds of what a subscription stores, in characters (code points, see characters.ts): without
 * them only the body limit held a record, and a list of 100 records could be 92 MB.
 */
export const NAME_MAX_CHARACTERS = 200;
export const TARGET_URL_MAX_CHARACTERS = 2_048;
/** Each of username, password, header type and credentials, and oauth2's client_id, client_secret, scope and audience. */
export const AUTH_STRING_MAX_CHARACTERS = 1_024;
/** oauth2's token_url, as long as a target URL may be. */
export const TOKEN_URL_MAX_CHARACTERS = 2_048;
/** Each of mtls's cert, key and ca (PEM): room for a chain, or a bundle of a few roots. */
export const PEM_MAX_CHARACTERS = 65_536;
/** What a record shows in place of a stored oauth2 client_secret or mtls key; sent back on a PUT, it keeps the stored one. */
export const MASKED_SECRET = '********';
export const EXTENSIONS_MAX_ENTRIES = 16;
/** A string value; numbers and booleans are short by nature. */
export const EXTENSION_VALUE_MAX_CHARACTERS = 256;
/** `rate_limit`: deliveries per second, a whole number in this range (or null: no limit). */
export const RATE_LIMIT_MIN = 1;
export const RATE_LIMIT_MAX = 10_000;

export type DeliveryKind = 'push' | 'pull';

export type Auth =
  | Record<string, never>
  | { type: 'basic'; basic: { username: string; password: string } }
  | { type: 'header'; header: { type: string; credentials: string } }
  | { type: 'oauth2'; oauth2: OAuth2Credentials }
  | { type: 'mtls'; mtls: ClientCertificate };

/** OAuth 2.0 client credentials (RFC 6749 section 4.4): where to get a token, and as whom. */
export interface OAuth2Credentials {
  token_url: string;
  client_id: string;
  client_secret: string;
  scope?: string;
  audience?: string;
}

/** A client certificate for mutual TLS, PEM: the certificate (chain), its private key, and roots trusted besides the system's. */
export interface ClientCertificate {
  cert: string;
  key: string;
  ca?: string;
}

export type ExtensionValue = string | number | boolean;
export type Extensions = Record<string, ExtensionValue>;

/** `schema`, or null. */
function nullable<T extends TSchema & { type: string }>(schema: T) {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });
}

/** A field the client writes: `write` checks it in a request; the record shows it as `record` (by default the same schema). */
interface ClientField<W extends TSchema, R extends TSchema> {
  write: W;
  record: R;
}

/**
 * A client field stored as sent, in the column of its name, which the record shows as it is:
 * create, PUT and the record take it without code of its own. `initial` is a create's without it.
 */
interface ColumnField<W extends TSchema, R extends TSchema> extends ClientField<W, R> {
  column: { initial: Static<R> };
}

/** A field the service sets: sent back by clients that PUT a record they read, and ignored. */
interface ServiceField<R extends TSchema> {
  ignored: string;
  record: R;
}

function client<W extends TSchema>(write: W): ClientField<W, W>;
function client<W extends TSchema, R extends TSchema>(write: W, record: R): ClientField<W, R>;
function client(write: TSchema, record: TSchema = write): ClientField<TSchema, TSchema> {
  return { write, record };
}

function column<W extends TSchema, R extends TSchema>(write: W, record: R, initial: Static<R>): ColumnField<W, R> {
  return { write, record, column: { initial } };
}

function service<R extends TSchema>(description: string, record: R): ServiceField<R> {
  return { ignored: `${description}; set by the service, ignored when sent`, record };
}

const timestamp = Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SS.ffffff' });
const nullableTimestamp = nullable(Type.String({ description: 'null, or UTC YYYY-MM-DDTHH:MM:SS.ffffff' }));

const authString = Type.String({ maxLength: AUTH_STRING_MAX_CHARACTERS });
const pemString = Type.String({ maxLength: PEM_MAX_CHARACTERS });
const AUTH_DESCRIPTION =
  'Credentials for the target: {} (none), {"type":"basic","basic":{"username","password"}} (HTTP Basic), ' +
  '{"type":"header","header":{"type","credentials"}} (sent as "Authorization: <type> <credentials>"), ' +
  '{"type":"oauth2","oauth2":{"token_url","client_id","client_secret","scope"?,"audience"?}} (OAuth 2.0 client credentials: ' +
  'a token from token_url, sent as "Authorization: Bearer <token>") or {"type":"mtls","mtls":{"cert","key","ca"?}} ' +
  '(PEM: a client certificate presented to an https target; ca adds trusted roots for it). ' +
  `${authDescription()} Echoed back to the owner as supplied, except oauth2's client_secret and mtls's key, shown as ` +
  `"${MASKED_SECRET}" (sent back so on a PUT, the stored one is kept); stored encrypted when NOTIFICATIONS_SECRET_KEY is set.`;
// Which members go with which type, and that they are there, is input.ts's (validateAuth): its messages say so.
const authWrite = Type.Object(
  {
    type: Type.Optional(Type.String({ description: '"basic", "header", "oauth2" or "mtls"' })),
    basic: Type.Optional(
      Type.Object({ username: Type.Optional(authString), password: Type.Optional(authString) }, { additionalProperties: false }),
    ),
    header: Type.Optional(
      Type.Object(
        {
          type: Type.Optional(
            Type.String({ maxLength: AUTH_STRING_MAX_CHARACTERS, description: 'the authentication scheme, e.g. Bearer' }),
          ),
          credentials: Type.Optional(authString),
        },
        { additionalProperties: false },
      ),
    ),
    oauth2: Type.Optional(
      Type.Object(
        {
          token_url: Type.Optional(
            Type.String({ maxLength: TOKEN_URL_MAX_CHARACTERS, description: 'absolute http or https URL of the token endpoint' }),
          ),
          client_id: Type.Optional(authString),
          client_secret: Type.Optional(authString),
          scope: Type.Optional(authString),
          audience: Type.Optional(authString),
        },
        { additionalProperties: false },
      ),
    ),
    mtls: Type.Optional(
      Type.Object(
        {
          cert: Type.Optional(pemString),
          key: Type.Optional(pemString),
          ca: Type.Optional(pemString),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { description: AUTH_DESCRIPTION, additionalProperties: false },
);
/** `auth` as its schema lets it through. */
export type SentAuth = Static<typeof authWrite>;

const EXTENSIONS_DESCRIPTION =
  'CloudEvents extension attributes added to every event delivered for this subscription: names of 1 to 20 lowercase ' +
  `letters or digits (not a context attribute such as id or type), values strings of at most ${EXTENSION_VALUE_MAX_CHARACTERS} ` +
  'characters, booleans or 32-bit integers';
// The length of a string value is input.ts's: in a schema it needs a type, and values have three.
const extensionsWrite = Type.Unsafe<Extensions>({
  type: 'object',
  description: EXTENSIONS_DESCRIPTION,
  maxProperties: EXTENSIONS_MAX_ENTRIES,
});

const RATE_LIMIT_DESCRIPTION =
  `deliveries per second to the target at most, ${RATE_LIMIT_MIN} to ${RATE_LIMIT_MAX}; null (the default): no limit. ` +
  'Deliveries over it wait their turn (none is dropped, none counts as a failure); the limit holds per instance';

const delivery = Type.Unsafe<DeliveryKind>({
  type: 'string',
  enum: ['push', 'pull'],
  description:
    'push (the default): events are POSTed to target_url; pull: no target, the owner reads them from ' +
    'GET /eventmatch/{uuid}/events (auth must be {}, rate_limit absent or null). Fixed once created',
});

/** The fields, in the order records give them: the specification's, then `rate_limit`, `delivery` and `notices`. */
export const SUBSCRIPTION_FIELDS = {
  user: service('owner', Type.String()),
  uuid: service('identifier', Type.String({ format: 'uuid' })),
  name: client(Type.String({ maxLength: NAME_MAX_CHARACTERS, description: 'human-readable name; not blank' }), Type.String()),
  jsonpath: client(
    Type.String({
      description:
        'JSONPath (RFC 9535 or Pacifica jsonpath2) selecting the events to route; compiled when written, its dialect stored with it. ' +
        'On a PUT, the stored text sent back keeps the stored expression and dialect (it is not read again under NOTIFICATIONS_JSONPATH_DIALECT)',
    }),
    Type.String(),
  ),
  target_url: client(
    nullable(
      Type.String({
        maxLength: TARGET_URL_MAX_CHARACTERS,
        description:
          `${targetUrlDescription()} (required for push; absent or null for pull); no credentials in it. Refused when NOTIFICATIONS_TARGET_DENY or ` +
          'NOTIFICATIONS_TARGET_ALLOW refuses its address, or every address its host name resolves to. With ' +
          'NOTIFICATIONS_TARGET_VALIDATION=handshake, a new target_url is first sent OPTIONS with WebHook-Request-Origin and ' +
          'WebHook-Request-Rate (the CloudEvents webhook handshake) and is stored only if the target answers 2xx with ' +
          'WebHook-Allowed-Origin (ours or *); its WebHook-Allowed-Rate (a minute) then caps deliveries with rate_limit',
      }),
    ),
    nullable(Type.String({ description: 'null for a pull subscription' })),
  ),
  auth: client(authWrite, Type.Unsafe<Auth>({ type: 'object', additionalProperties: true, description: AUTH_DESCRIPTION })),
  extensions: client(
    extensionsWrite,
    Type.Unsafe<Extensions>({ type: 'object', additionalProperties: true, description: EXTENSIONS_DESCRIPTION }),
  ),
  created: service('creation time', timestamp),
  updated: service('last change', timestamp),
  deleted: service('deletion time', nullableTimestamp),
  disabled: client(
    Type.Unsafe<unknown>({
      description:
        'null re-enables the subscription and clears error; any other value disables it now. Re-enabling without a new jsonpath ' +
        'compiles the stored expression in its stored dialect: 400 JSONPATH_SYNTAX naming body.jsonpath when it does not compile',
    }),
    nullableTimestamp,
  ),
  version: service('record version', Type.String({ description: '"v0.1"' })),
  error: service('why the service disabled it', nullable(Type.String({ description: 'why the service disabled the subscription' }))),
  rate_limit: column(
    nullable(Type.Integer({ minimum: RATE_LIMIT_MIN, maximum: RATE_LIMIT_MAX, description: RATE_LIMIT_DESCRIPTION })),
    nullable(Type.Integer({ description: RATE_LIMIT_DESCRIPTION })),
    null,
  ),
  delivery: client(delivery),
  notices: client(
    Type.Boolean({
      description:
        "true: the service's own events about the owner's other subscriptions (source /svc-notifications, types " +
        'svc.notifications.subscription.disabled, .enabled and .failing) match this subscription too, when its jsonpath selects ' +
        'them; false (the default): they never reach it, whatever its jsonpath (a $ or $.data subscription receives data events only)',
    }),
  ),
};

type Fields = typeof SUBSCRIPTION_FIELDS;
export type FieldName = keyof Fields;
/** The fields a client writes (the others it may send back, and they are ignored). */
export type WritableField = { [K in FieldName]: Fields[K] extends ClientField<TSchema, TSchema> ? K : never }[FieldName];

/** The fields stored as sent, each in its own column (column() above). */
export type ColumnFieldName = { [K in FieldName]: Fields[K] extends { column: object } ? K : never }[FieldName];

/** A subscription as the API shows it to its owner (record.ts makes it from a row). */
export type SubscriptionRecord = { [K in FieldName]: Static<Fields[K]['record']> };

/** What a create or PUT may send, as its schema has checked it (input.ts checks the rest). */
export type SubscriptionWrite = { [K in WritableField]?: Static<Fields[K]['write']> };

export const RECORD_FIELDS = Object.keys(SUBSCRIPTION_FIELDS) as readonly FieldName[];
export const WRITABLE_FIELDS = RECORD_FIELDS.filter((name): name is WritableField => 'write' in SUBSCRIPTION_FIELDS[name]);
export const COLUMN_FIELDS = RECORD_FIELDS.filter((name): name is ColumnFieldName => 'column' in SUBSCRIPTION_FIELDS[name]);

/** Each column field's value when a create does not send it: what a new row stores. */
export const COLUMN_INITIAL = Object.fromEntries(COLUMN_FIELDS.map((name) => [name, SUBSCRIPTION_FIELDS[name].column.initial])) as {
  [K in ColumnFieldName]: SubscriptionRecord[K];
};
