/**
 * What a client sends about a subscription, checked beyond what the JSON schema can say. Every
 * failure is a 400 of the catalogue (errors.ts: FIELD_*, TARGET_URL_INVALID, JSONPATH_SYNTAX,
 * QUERY_PARAMETER_INVALID, BODY_TOO_DEEP) whose message starts with the field at fault
 * (`body.auth.basic.username: …`, the same form the schema errors take) and never repeats a credential.
 */
import { characterCount } from '../characters.js';
import { authRefusal } from '../destinations/kinds.js';
import { targetUrlProblem } from '../destinations/target-url.js';
import { jsonPathSyntax, serviceError } from '../errors.js';
import { type JsonValue, MAX_DOCUMENT_DEPTH, nestedDeeperThan } from '../json.js';
import { type CompiledJsonPath, compileJsonPath, type Dialect, type DialectMode, JsonPathSyntaxError } from '../jsonpath/index.js';
import {
  type Auth,
  type DeliveryKind,
  EXTENSION_VALUE_MAX_CHARACTERS,
  type Extensions,
  type ExtensionValue,
  type SentAuth,
  type SubscriptionWrite,
  WRITABLE_FIELDS,
} from './fields.js';
import { refuseMask } from './masked-secrets.js';
import { validateMtls } from './mtls-input.js';
import { validateOAuth2 } from './oauth2-input.js';

export {
  type Auth,
  AUTH_STRING_MAX_CHARACTERS,
  EXTENSION_VALUE_MAX_CHARACTERS,
  type Extensions,
  EXTENSIONS_MAX_ENTRIES,
  type ExtensionValue,
  NAME_MAX_CHARACTERS,
  RATE_LIMIT_MAX,
  RATE_LIMIT_MIN,
  TARGET_URL_MAX_CHARACTERS,
} from './fields.js';

/**
 * A create or update, validated: the fields as sent (the route's schema has checked their types,
 * bounds and names), `jsonpath` compiled and `disabled` read. Absent members are left as they
 * are (update) or defaulted (create).
 */
export type SubscriptionChangeInput = Omit<SubscriptionWrite, 'jsonpath' | 'disabled' | 'auth' | 'extensions'> & {
  compiled?: CompiledJsonPath;
  auth?: Auth;
  extensions?: Extensions;
  /** true: disable now; false: enable and clear the error. */
  disable?: boolean;
};

export type SubscriptionCreateInput = SubscriptionChangeInput & {
  name: string;
  compiled: CompiledJsonPath;
  delivery: DeliveryKind;
};

export type Body = Readonly<Record<string, unknown>>;

/**
 * `body` has passed the create schema (eventmatch-schemas.ts), which requires name and jsonpath;
 * a push subscription's target_url is required here, naming the field.
 */
export function validateCreate(body: Body, mode: DialectMode): SubscriptionCreateInput {
  const input = validateUpdate(body, mode);
  const delivery = input.delivery ?? 'push';
  checkDeliveryFields(delivery, input);
  if (input.auth !== undefined) refuseMask(input.auth);
  if (typeof input.target_url === 'string' && input.auth !== undefined) checkTargetAuth(input.target_url, input.auth);
  return { ...input, delivery } as SubscriptionCreateInput;
}

/**
 * What each kind of delivery takes: push a target URL; pull none, and no credentials or rate
 * limit (nothing is sent). Applied to a create, and to a PUT with the stored kind (a record PUT
 * back as read, `target_url: null` and all, passes).
 */
export function checkDeliveryFields(delivery: DeliveryKind, input: SubscriptionChangeInput, creating = true): void {
  if (delivery === 'push') {
    if (input.target_url === null || (creating && input.target_url === undefined))
      throw serviceError('FIELD_REQUIRED', 'body.target_url', 'for a push subscription (or send "delivery": "pull")');
    return;
  }
  if (input.target_url !== undefined && input.target_url !== null)
    throw serviceError('FIELD_INVALID', 'body.target_url', 'must be absent or null for a pull subscription');
  if (input.auth !== undefined && Object.keys(input.auth).length > 0)
    throw serviceError('FIELD_INVALID', 'body.auth', 'must be {} for a pull subscription: nothing is sent to a target');
  if (input.rate_limit !== undefined && input.rate_limit !== null)
    throw serviceError('FIELD_INVALID', 'body.rate_limit', 'must be absent or null for a pull subscription: its reader sets the pace');
}

/**
 * `body` has passed the create or PUT schema: it holds only declared fields, of their types and
 * within their bounds (the fields the service sets are ignored). Here, what a schema cannot say.
 */
export function validateUpdate(body: Body, mode: DialectMode): SubscriptionChangeInput {
  const sent = body as SubscriptionWrite;
  const input: SubscriptionChangeInput = {};
  // Those a schema says all of (rate_limit, notices, delivery…) are taken as sent; the others are replaced below.
  for (const field of WRITABLE_FIELDS) {
    if (field !== 'jsonpath' && field !== 'disabled' && sent[field] !== undefined) Object.assign(input, { [field]: sent[field] });
  }
  if (sent.name !== undefined) input.name = validateName(sent.name);
  if (sent.jsonpath !== undefined) input.compiled = compileExpression(sent.jsonpath, 'body.jsonpath', mode);
  if (typeof sent.target_url === 'string') input.target_url = validateTargetUrl(sent.target_url);
  if (sent.auth !== undefined) input.auth = validateAuth(sent.auth);
  if (sent.extensions !== undefined) input.extensions = validateExtensions(sent.extensions);
  if ('disabled' in body) input.disable = body.disabled !== null;
  return input;
}

function validateName(name: string): string {
  if (name.trim() === '') throw serviceError('FIELD_INVALID', 'body.name', 'must not be empty');
  // PostgreSQL cannot store NUL, and would store an unpaired surrogate as U+FFFD.
  if (DISALLOWED_IN_STRING.test(name))
    throw serviceError('FIELD_INVALID', 'body.name', 'must not contain control characters, unpaired surrogates or noncharacters');
  return name;
}

/** Compiles `value` in the first dialect of `mode` that accepts it; 400 with the error's position. */
function compileExpression(value: unknown, field: string, mode: DialectMode): CompiledJsonPath {
  const source = requireString(value, field);
  if (UNPAIRED_SURROGATE.test(source))
    throw serviceError('FIELD_INVALID', field, 'must not contain unpaired surrogates (write them as \\u escapes)');
  try {
    return compileJsonPath(source, mode);
  } catch (error) {
    if (error instanceof JsonPathSyntaxError) throw jsonPathSyntax(field, error.message, error.position);
    throw error;
  }
}

/**
 * A subscription's stored expression, compiled in the dialect stored with it, for enabling it
 * without a new one: 400 naming `body.jsonpath` when it does not compile (it was written under
 * other limits, or imported from the original service), since the matcher would leave it out.
 */
export function checkStoredExpression(jsonpath: string, dialect: Dialect): void {
  try {
    compileJsonPath(jsonpath, dialect);
  } catch (error) {
    if (error instanceof JsonPathSyntaxError)
      throw jsonPathSyntax(
        'body.jsonpath',
        `the stored expression does not compile in its dialect, ${dialect} (${error.message}); send a new jsonpath with "disabled": null to enable the subscription`,
        error.position,
      );
    throw error;
  }
}

/**
 * Credentials in the URL are refused: they would be stored and echoed in clear text (only
 * `auth` is encrypted) and appear wherever the URL is logged. The URL is kept as written, so
 * what could make it read differently from how it parses (spaces, control characters) is refused.
 * The rest depends on its kind (destinations/: an HTTP URL, or a broker's read by its protocol's rules).
 */
export function validateTargetUrl(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  if (/[\s\x00-\x1f\x7f]/.test(text)) throw serviceError('TARGET_URL_INVALID', 'must not contain spaces or control characters');
  const problem = targetUrlProblem(text);
  if (problem !== undefined) throw serviceError('TARGET_URL_INVALID', problem);
  return text;
}

/**
 * Each kind of target takes some `auth` types (destinations/kinds.ts): a broker a user name and
 * password (`basic`), or none; an Authorization header (`header`, `oauth2`) or a client
 * certificate (`mtls`) means nothing to it, and a certificate is presented to https targets only.
 * Checked wherever target and credentials meet: a create, a PUT of either.
 */
export function checkTargetAuth(targetUrl: string, auth: Auth): void {
  const refusal = 'type' in auth ? authRefusal(targetUrl, auth.type) : undefined;
  if (refusal !== undefined) throw serviceError('FIELD_INVALID', 'body.auth.type', refusal);
}

// RFC 9110 token: what an auth scheme such as `Bearer` is made of.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Visible ASCII with inner spaces: all a header value can carry through every HTTP stack.
const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const CONTROL = /[\x00-\x1f\x7f]/;

/** `auth` as its schema lets it through: which members go with which type, and that they are there, is checked here. */
export function validateAuth(auth: SentAuth): Auth {
  const members = Object.keys(auth);
  if (members.length === 0) return {};
  const type = auth.type;
  if (type === undefined)
    throw serviceError('FIELD_REQUIRED', 'body.auth.type', '("basic", "header", "oauth2" or "mtls"), or send {} for no credentials');
  if (type !== 'basic' && type !== 'header' && type !== 'oauth2' && type !== 'mtls')
    throw serviceError('FIELD_INVALID', 'body.auth.type', 'must be "basic", "header", "oauth2" or "mtls"');
  for (const member of members) {
    if (member !== 'type' && member !== type)
      throw serviceError('FIELD_INVALID', `body.auth.${member}`, `not allowed when type is "${type}"`);
  }
  if (auth[type] === undefined) throw serviceError('FIELD_REQUIRED', `body.auth.${type}`, `when type is "${type}"`);
  if (type === 'oauth2') return { type, oauth2: validateOAuth2(auth.oauth2!) };
  if (type === 'mtls') return { type, mtls: validateMtls(auth.mtls!) };
  if (type === 'basic') {
    const basic = requireMembers(auth.basic!, 'body.auth.basic', ['username', 'password']);
    // RFC 7617: the user-id cannot hold a colon, and neither part a control character.
    if (basic.username.includes(':')) throw serviceError('FIELD_INVALID', 'body.auth.basic.username', 'must not contain ":"');
    for (const part of ['username', 'password'] as const) {
      if (CONTROL.test(basic[part])) throw serviceError('FIELD_INVALID', `body.auth.basic.${part}`, 'must not contain control characters');
    }
    return { type, basic: { username: basic.username, password: basic.password } };
  }
  const header = requireMembers(auth.header!, 'body.auth.header', ['type', 'credentials']);
  if (!TOKEN.test(header.type))
    throw serviceError(
      'FIELD_INVALID',
      'body.auth.header.type',
      'must be an authentication scheme such as Bearer (letters, digits, no spaces)',
    );
  if (!HEADER_VALUE.test(header.credentials)) {
    throw serviceError(
      'FIELD_INVALID',
      'body.auth.header.credentials',
      'must be non-empty visible ASCII, without leading or trailing spaces',
    );
  }
  return { type, header: { type: header.type, credentials: header.credentials } };
}

/** The members of `body.auth.basic` or `body.auth.header`, each there (the schema has said what else they may be). */
function requireMembers<K extends string>(object: Partial<Record<K, string>>, field: string, names: readonly K[]): Record<K, string> {
  for (const name of names) if (object[name] === undefined) throw serviceError('FIELD_REQUIRED', `${field}.${name}`);
  return object as Record<K, string>;
}

// CloudEvents 1.0 context attributes, plus those of 0.3 and (lower-cased) the legacy 0.1
// shape the facility still emits: an extension must never overwrite or shadow one of them.
const CONTEXT_ATTRIBUTES = new Set([
  'id',
  'source',
  'specversion',
  'type',
  'datacontenttype',
  'dataschema',
  'subject',
  'time',
  'data',
  'schemaurl',
  'datacontentencoding',
  'cloudeventsversion',
  'eventid',
  'eventtype',
  'eventtypeversion',
  'eventtime',
  'contenttype',
  'extensions',
]);
const EXTENSION_NAME = /^[a-z0-9]{1,20}$/;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
// CloudEvents String: no C0/C1 controls, no unpaired surrogates, no Unicode noncharacters.
const DISALLOWED_IN_STRING = /[\p{Cc}\p{Cs}\p{Noncharacter_Code_Point}]/u;
const UNPAIRED_SURROGATE = /\p{Cs}/u;

/** `object` as its schema lets it through (at most EXTENSIONS_MAX_ENTRIES): names and values are checked here. */
export function validateExtensions(object: Readonly<Record<string, unknown>>): Extensions {
  const extensions: Extensions = {};
  for (const [name, attribute] of Object.entries(object)) {
    const field = `body.extensions.${name}`;
    if (!EXTENSION_NAME.test(name))
      throw serviceError('FIELD_INVALID', field, 'extension names are 1 to 20 lowercase letters or digits (CloudEvents)');
    if (CONTEXT_ATTRIBUTES.has(name))
      throw serviceError('FIELD_INVALID', field, 'is a CloudEvents context attribute, not an extension; choose another name');
    if (typeof attribute === 'number') {
      // CloudEvents has no fractional or 64-bit numbers: its Integer is 32-bit signed.
      if (!Number.isInteger(attribute) || attribute < INT32_MIN || attribute > INT32_MAX) {
        throw serviceError(
          'FIELD_INVALID',
          field,
          `numbers must be integers from ${INT32_MIN} to ${INT32_MAX} (CloudEvents Integer); send others as strings`,
        );
      }
    } else if (typeof attribute === 'string') {
      requireAtMost(attribute, EXTENSION_VALUE_MAX_CHARACTERS, field);
      if (DISALLOWED_IN_STRING.test(attribute))
        throw serviceError('FIELD_INVALID', field, 'must not contain control characters, unpaired surrogates or noncharacters');
    } else if (typeof attribute !== 'boolean') {
      throw serviceError('FIELD_TYPE', field, 'a string, an integer or a boolean');
    }
    extensions[name] = attribute as ExtensionValue;
  }
  return extensions;
}

export interface TryItInput {
  compiled: CompiledJsonPath;
  event: JsonValue;
}

/** The body of `POST /eventmatch/test`: `{"jsonpath": "...", "event": {...}}`. */
export function validateTryIt(body: Body, mode: DialectMode): TryItInput {
  for (const field of Object.keys(body)) {
    if (field !== 'jsonpath' && field !== 'event') throw serviceError('FIELD_UNKNOWN', 'body', field);
  }
  if (body.jsonpath === undefined) throw serviceError('FIELD_REQUIRED', 'body.jsonpath');
  if (body.event === undefined) throw serviceError('FIELD_REQUIRED', 'body.event');
  const event = evaluableDocument(requireObject(body.event, 'body.event') as JsonValue, 'body.event');
  return { compiled: compileExpression(body.jsonpath, 'body.jsonpath', mode), event };
}

/** A document expressions can be tried on: not nested deeper than events may be. */
export function evaluableDocument(document: JsonValue, field: string): JsonValue {
  if (nestedDeeperThan(document, MAX_DOCUMENT_DEPTH)) throw serviceError('BODY_TOO_DEEP', field, MAX_DOCUMENT_DEPTH);
  return document;
}

export interface Page {
  limit: number;
  offset: number;
}

export const PAGE_LIMIT_DEFAULT = 100;
export const PAGE_LIMIT_MAX = 1000;

/** `?limit=&offset=` of a listing: numbers once the route's schema has checked them, or query-string text. */
export function parsePage(
  query: Readonly<Record<string, unknown>>,
  limits: { default: number; max: number } = { default: PAGE_LIMIT_DEFAULT, max: PAGE_LIMIT_MAX },
): Page {
  return {
    limit: integerParameter(query.limit, 'limit', limits.default, 1, limits.max),
    offset: integerParameter(query.offset, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
  };
}

function integerParameter(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const range = max === Number.MAX_SAFE_INTEGER ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`;
  const number = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max)
    throw serviceError('QUERY_PARAMETER_INVALID', `querystring.${name}`, `must be ${range}`);
  return number;
}

function requireAtMost(text: string, max: number, field: string): string {
  // A string is never more characters than UTF-16 units: most need no count.
  const found = text.length <= max ? 0 : characterCount(text);
  if (found > max) throw serviceError('FIELD_INVALID', field, `at most ${max} characters (found ${found})`);
  return text;
}

function requireString(value: unknown, field: string): string {
  if (typeof value !== 'string') throw serviceError('FIELD_TYPE', field, 'a string');
  return value;
}

function requireObject(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw serviceError('FIELD_TYPE', field, 'an object');
  return value as Record<string, unknown>;
}
