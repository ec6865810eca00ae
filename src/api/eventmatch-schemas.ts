/**
 * JSON schemas of `/eventmatch`: they validate requests (types, required and unknown fields)
 * and describe the API in /openapi.json. What a schema cannot say well (URL, JSONPath, auth
 * shapes, extension names) is checked in subscriptions/input.ts, with messages naming the field.
 * Lengths (maxLength) are in characters, code points as input.ts counts them.
 */
import {
  AUTH_STRING_MAX_CHARACTERS,
  EXTENSION_VALUE_MAX_CHARACTERS,
  EXTENSIONS_MAX_ENTRIES,
  NAME_MAX_CHARACTERS,
  PAGE_LIMIT_DEFAULT,
  PAGE_LIMIT_MAX,
  TARGET_URL_MAX_CHARACTERS,
} from '../subscriptions/input.js';

const TAGS = ['subscriptions'];

export const errorResponse = {
  description: 'An error; the message names the offending field',
  type: 'object',
  properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' } },
  required: ['statusCode', 'error', 'message'],
} as const;

/** What each error status means here; each route lists those it can answer. */
const ERROR_STATUSES = {
  400: 'Invalid request: the message names the field, query parameter or header at fault (the identity header given twice, too)',
  401: 'No identity: the identity header (NOTIFICATIONS_USER_HEADER) is missing or empty and no NOTIFICATIONS_DEFAULT_USER is set',
  404: "No such subscription of the caller: missing, deleted, not a uuid, or someone else's (the same answer in every case)",
  413: 'The body is larger than NOTIFICATIONS_MAX_BODY',
  415: 'The body is not application/json in UTF-8, or has a Content-Encoding (content codings are not decoded)',
  500: 'Server error, e.g. stored credentials that do not open with this NOTIFICATIONS_SECRET_KEY',
} as const;

type ErrorStatus = keyof typeof ERROR_STATUSES;

export function errorResponses(...statuses: ErrorStatus[]): Record<number, object> {
  return Object.fromEntries(statuses.map((status) => [status, { ...errorResponse, description: ERROR_STATUSES[status] }]));
}

const serviceSet = (description: string) => ({ description: `${description}; set by the service, ignored when sent` });

const authString = { type: 'string', maxLength: AUTH_STRING_MAX_CHARACTERS } as const;

const auth = {
  type: 'object',
  description:
    'Credentials for the target: {} (none), {"type":"basic","basic":{"username","password"}} (HTTP Basic) or ' +
    '{"type":"header","header":{"type","credentials"}} (sent as "Authorization: <type> <credentials>"). ' +
    'Echoed back to the owner as supplied; stored encrypted when NOTIFICATIONS_SECRET_KEY is set.',
  additionalProperties: false,
  properties: {
    type: { type: 'string', description: '"basic" or "header"' },
    basic: {
      type: 'object',
      additionalProperties: false,
      properties: { username: authString, password: authString },
    },
    header: {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { ...authString, description: 'the authentication scheme, e.g. Bearer' },
        credentials: authString,
      },
    },
  },
} as const;

const extensions = {
  type: 'object',
  description:
    'CloudEvents extension attributes added to every event delivered for this subscription: names of 1 to 20 lowercase ' +
    `letters or digits (not a context attribute such as id or type), values strings of at most ${EXTENSION_VALUE_MAX_CHARACTERS} ` +
    'characters, booleans or 32-bit integers',
  // The length of a string value is input.ts's: in a schema it needs a type, and values have three.
  maxProperties: EXTENSIONS_MAX_ENTRIES,
} as const;

const writable = {
  name: { type: 'string', maxLength: NAME_MAX_CHARACTERS, description: 'human-readable name; not blank' },
  jsonpath: { type: 'string', description: 'JSONPath (RFC 9535 or Pacifica jsonpath2) selecting the events to route' },
  target_url: {
    type: 'string',
    maxLength: TARGET_URL_MAX_CHARACTERS,
    description:
      'absolute http or https URL the events are POSTed to; no credentials in it. Refused when NOTIFICATIONS_TARGET_DENY or ' +
      'NOTIFICATIONS_TARGET_ALLOW refuses its address, or every address its host name resolves to',
  },
  auth,
  extensions,
  disabled: { description: 'null re-enables the subscription and clears error; any other value disables it now' },
} as const;

const ignored = {
  uuid: serviceSet('identifier'),
  user: serviceSet('owner'),
  created: serviceSet('creation time'),
  updated: serviceSet('last change'),
  deleted: serviceSet('deletion time'),
  version: serviceSet('record version'),
  error: serviceSet('why the service disabled it'),
} as const;

export const timestamp = { type: 'string', description: 'UTC, YYYY-MM-DDTHH:MM:SS.ffffff' } as const;
const nullableTimestamp = { type: ['string', 'null'], description: 'null, or UTC YYYY-MM-DDTHH:MM:SS.ffffff' } as const;

const subscriptionRecord = {
  type: 'object',
  properties: {
    user: { type: 'string' },
    uuid: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    jsonpath: { type: 'string' },
    target_url: { type: 'string' },
    auth: { type: 'object', additionalProperties: true, description: auth.description },
    extensions: { type: 'object', additionalProperties: true, description: extensions.description },
    created: timestamp,
    updated: timestamp,
    deleted: nullableTimestamp,
    disabled: nullableTimestamp,
    version: { type: 'string', description: '"v0.1"' },
    error: { type: ['string', 'null'], description: 'why the service disabled the subscription' },
  },
  required: ['user', 'uuid', 'name', 'jsonpath', 'target_url', 'auth', 'extensions', 'created', 'updated', 'deleted', 'disabled', 'version', 'error'],
} as const;

const tryItResult = {
  type: 'object',
  properties: {
    matches: { type: 'boolean' },
    dialect: { type: 'string', enum: ['rfc9535', 'jsonpath2'] },
    values: { type: 'array', items: {}, description: 'the selected values' },
    paths: { type: 'array', items: { type: 'string' }, description: 'their normalized paths' },
  },
  required: ['matches', 'dialect', 'values', 'paths'],
} as const;

export const uuidParams = {
  type: 'object',
  properties: { uuid: { type: 'string', description: 'the subscription uuid' } },
  required: ['uuid'],
} as const;

export const identityHeaders = (userHeader: string) => ({
  type: 'object',
  properties: { [userHeader]: { type: 'string', description: 'the acting user, set by the front proxy' } },
});

/** The errors of a route with a subscription uuid in its path and no body. */
export const errors = errorResponses(400, 401, 404, 500);
/** The errors of a route with a body: without a uuid (create, try an expression) and with one. */
const bodyErrors = errorResponses(400, 401, 413, 415, 500);
const uuidBodyErrors = errorResponses(400, 401, 404, 413, 415, 500);

/** `?limit=&offset=` (app.ts turns their digits into numbers before the schema checks them). */
export const pageQuerystring = (limits: { default: number; max: number }) => ({
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: limits.max, default: limits.default, description: 'how many records at most' },
    offset: { type: 'integer', minimum: 0, default: 0, description: 'how many records to skip' },
  },
});

export function eventmatchSchemas(userHeader: string) {
  const headers = identityHeaders(userHeader);
  return {
    create: {
      tags: TAGS,
      summary: 'Create a subscription',
      headers,
      body: { type: 'object', additionalProperties: false, properties: { ...writable, ...ignored }, required: ['name', 'jsonpath', 'target_url'] },
      response: {
        200: {
          ...subscriptionRecord,
          description: 'The new subscription',
          headers: { Location: { type: 'string', description: 'its path: /eventmatch/{uuid}' } },
        },
        ...bodyErrors,
      },
    },
    list: {
      tags: TAGS,
      summary: "The caller's live subscriptions, oldest first",
      headers,
      querystring: pageQuerystring({ default: PAGE_LIMIT_DEFAULT, max: PAGE_LIMIT_MAX }),
      response: { 200: { type: 'array', items: subscriptionRecord }, ...errorResponses(400, 401, 500) },
    },
    get: { tags: TAGS, summary: 'A subscription', headers, params: uuidParams, response: { 200: subscriptionRecord, ...errors } },
    update: {
      tags: TAGS,
      summary: 'Change some fields of a subscription',
      headers,
      params: uuidParams,
      body: { type: 'object', additionalProperties: false, properties: { ...writable, ...ignored } },
      response: { 200: subscriptionRecord, ...uuidBodyErrors },
    },
    remove: {
      tags: TAGS,
      summary: 'Delete a subscription (it never matches again)',
      headers,
      params: uuidParams,
      // A body is not needed; one that is sent is read by the same rules as any other.
      response: { 200: { ...subscriptionRecord, description: 'the final record' }, ...uuidBodyErrors },
    },
    tryExpression: {
      tags: TAGS,
      summary: 'Try a JSONPath on an event; nothing is logged or delivered',
      headers,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: {
          jsonpath: writable.jsonpath,
          event: { type: 'object', description: 'a CloudEvent in structured-mode JSON form' },
        },
        required: ['jsonpath', 'event'],
      },
      response: { 200: tryItResult, ...bodyErrors },
    },
    trySubscription: {
      tags: TAGS,
      summary: "Try a subscription's JSONPath, in its stored dialect, on an event; nothing is logged or delivered",
      headers,
      params: uuidParams,
      body: { type: 'object', description: 'a CloudEvent in structured-mode JSON form' },
      response: { 200: tryItResult, ...uuidBodyErrors },
    },
  };
}
