/**
 * JSON schemas of `/eventmatch`: they validate requests (types, required and unknown fields)
 * and describe the API in /openapi.json. A subscription's fields are declared in
 * subscriptions/fields.ts; what a schema cannot say well (URL, JSONPath, auth shapes, extension
 * names) is checked in subscriptions/input.ts, with messages naming the field. Lengths
 * (maxLength) are in characters: code points, as Ajv and characters.ts count them.
 */

import type { ErrorCode } from '../errors.js';
import type { TSchema } from 'typebox';
import { RECORD_FIELDS, SUBSCRIPTION_FIELDS as FIELDS, WRITABLE_FIELDS, type WritableField } from '../subscriptions/fields.js';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX } from '../subscriptions/input.js';
import { GIVEN_KEY_MAX_BYTES, GIVEN_KEY_MIN_BYTES, SECRET_PREFIX } from '../subscriptions/signing-secret.js';
import { errorResponses } from './error-responses.js';

const TAGS = ['subscriptions'];

/** What each error status means here; the codes each route can answer are added to it. */
const ERROR_STATUSES: Record<number, string> = {
  400: 'Invalid request: the message names the field, query parameter or header at fault (the identity header given twice, too)',
  401:
    'No identity: the identity header (NOTIFICATIONS_USER_HEADER) is missing or empty and no NOTIFICATIONS_DEFAULT_USER is set, ' +
    'or the request comes from a peer outside NOTIFICATIONS_TRUSTED_PROXIES (IDENTITY_UNTRUSTED when it carries the header)',
  403: 'The user holds as many live subscriptions as NOTIFICATIONS_USER_SUBSCRIPTIONS allows; nothing was stored',
  404: "No such subscription of the caller: missing, deleted, not a uuid, or someone else's (the same answer in every case)",
  409: 'The subscription is disabled, or the delivery is being worked on right now',
  413: 'The body is larger than NOTIFICATIONS_MAX_BODY',
  415: 'The body is not application/json in UTF-8, or has a Content-Encoding (content codings are not decoded)',
  500: 'Server error, e.g. stored credentials that do not open with this NOTIFICATIONS_SECRET_KEY',
  503: 'The database did not answer within NOTIFICATIONS_DATABASE_TIMEOUT, or refused a write for lack of space; ask again after Retry-After seconds',
};

/** The error answers of an /eventmatch route that can answer `codes`. */
export const eventmatchErrors = (...codes: ErrorCode[]) => errorResponses(codes, (status) => ERROR_STATUSES[status] ?? String(status));

/**
 * Every /eventmatch route: who is asking, a query parameter it does not define (query-parameters.ts),
 * and what the server itself may fail at.
 */
export const EVERY_ROUTE: readonly ErrorCode[] = [
  'IDENTITY_HEADER_REPEATED',
  'QUERY_PARAMETER_INVALID',
  'UNAUTHENTICATED',
  'IDENTITY_UNTRUSTED',
  'INTERNAL',
  'DATABASE_UNAVAILABLE',
  'STORAGE_FULL',
];
/** A route that answers with subscription records opens their stored credentials. */
const RECORDS: readonly ErrorCode[] = ['CREDENTIALS_UNREADABLE'];
/** A route that reads a JSON body (requireJsonBody and parseJsonBody in eventmatch-routes.ts). */
export const JSON_BODY: readonly ErrorCode[] = [
  'BODY_NOT_JSON',
  'BODY_TOO_DEEP',
  'BODY_INCOMPLETE',
  'BODY_TOO_LARGE',
  'MEDIA_TYPE_UNSUPPORTED',
  'CONTENT_ENCODING_UNSUPPORTED',
];
/** What subscriptions/input.ts and the schema check in a subscription's fields. */
const SUBSCRIPTION_FIELDS: readonly ErrorCode[] = [
  'FIELD_REQUIRED',
  'FIELD_UNKNOWN',
  'FIELD_TYPE',
  'FIELD_INVALID',
  'TARGET_URL_INVALID',
  'TARGET_DENIED',
  'TARGET_CONSENT_REFUSED',
  'JSONPATH_SYNTAX',
];

/**
 * The body of a create or PUT: the fields a client writes, then those the service sets, with a
 * schema that takes anything (a record PUT back as read passes).
 */
const writeProperties = Object.fromEntries(
  [...WRITABLE_FIELDS, ...RECORD_FIELDS.filter((name) => !WRITABLE_FIELDS.includes(name as WritableField))].map((name) => {
    const field: { write?: TSchema; ignored?: string } = FIELDS[name];
    return [name, field.write ?? { description: field.ignored }];
  }),
);

export const timestamp = { type: 'string', description: 'UTC, YYYY-MM-DDTHH:MM:SS.ffffff' } as const;

const subscriptionRecord = {
  type: 'object',
  properties: Object.fromEntries(RECORD_FIELDS.map((name) => [name, FIELDS[name].record])),
  required: [...RECORD_FIELDS],
} as const;

const signingSecret = {
  type: 'object',
  properties: {
    secret: {
      type: 'string',
      description: `"${SECRET_PREFIX}" followed by the base64 of the HMAC-SHA256 key deliveries are signed with (Standard Webhooks)`,
    },
  },
  required: ['secret'],
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
      body: {
        type: 'object',
        additionalProperties: false,
        properties: writeProperties,
        // target_url is required for push only: input.ts says so, naming the field.
        required: ['name', 'jsonpath'],
      },
      response: {
        200: {
          ...subscriptionRecord,
          description: 'The new subscription',
          headers: { Location: { type: 'string', description: 'its path: /eventmatch/{uuid}' } },
        },
        ...eventmatchErrors(...EVERY_ROUTE, ...JSON_BODY, ...SUBSCRIPTION_FIELDS, 'SUBSCRIPTION_LIMIT'),
      },
    },
    list: {
      tags: TAGS,
      summary: "The caller's live subscriptions, oldest first",
      headers,
      querystring: pageQuerystring({ default: PAGE_LIMIT_DEFAULT, max: PAGE_LIMIT_MAX }),
      response: {
        200: { type: 'array', items: subscriptionRecord },
        ...eventmatchErrors(...EVERY_ROUTE, ...RECORDS, 'QUERY_PARAMETER_INVALID'),
      },
    },
    get: {
      tags: TAGS,
      summary: 'A subscription',
      headers,
      params: uuidParams,
      response: { 200: subscriptionRecord, ...eventmatchErrors(...EVERY_ROUTE, ...RECORDS, 'SUBSCRIPTION_NOT_FOUND') },
    },
    update: {
      tags: TAGS,
      summary: 'Change some fields of a subscription',
      headers,
      params: uuidParams,
      body: { type: 'object', additionalProperties: false, properties: writeProperties },
      response: {
        200: subscriptionRecord,
        ...eventmatchErrors(...EVERY_ROUTE, ...RECORDS, ...JSON_BODY, ...SUBSCRIPTION_FIELDS, 'SUBSCRIPTION_NOT_FOUND'),
      },
    },
    remove: {
      tags: TAGS,
      summary: 'Delete a subscription (it never matches again)',
      headers,
      params: uuidParams,
      // A body is not needed; one that is sent is read by the same rules as any other.
      response: {
        200: { ...subscriptionRecord, description: 'the final record' },
        ...eventmatchErrors(...EVERY_ROUTE, ...RECORDS, ...JSON_BODY, 'SUBSCRIPTION_NOT_FOUND'),
      },
    },
    signingSecret: {
      tags: TAGS,
      summary: 'The secret deliveries are signed with (Standard Webhooks); the owner only',
      headers,
      params: uuidParams,
      response: {
        200: { ...signingSecret, description: 'The current signing secret' },
        ...eventmatchErrors(...EVERY_ROUTE, ...RECORDS, 'SUBSCRIPTION_NOT_FOUND'),
      },
    },
    rotateSigningSecret: {
      tags: TAGS,
      summary:
        'Replace the signing secret: with the one sent, or a new random one. For NOTIFICATIONS_SECRET_OVERLAP after, ' +
        'deliveries are signed with the previous secret too',
      headers,
      params: uuidParams,
      // Optional: without a body (or with {}) the service makes the secret.
      body: {
        type: 'object',
        additionalProperties: false,
        properties: {
          secret: {
            type: 'string',
            description: `"${SECRET_PREFIX}" followed by the base64 of a ${GIVEN_KEY_MIN_BYTES} to ${GIVEN_KEY_MAX_BYTES} byte key`,
          },
        },
      },
      response: {
        200: { ...signingSecret, description: 'The new signing secret' },
        ...eventmatchErrors(...EVERY_ROUTE, ...JSON_BODY, 'FIELD_UNKNOWN', 'FIELD_TYPE', 'FIELD_INVALID', 'SUBSCRIPTION_NOT_FOUND'),
      },
    },
    tryExpression: {
      tags: TAGS,
      summary: 'Try a JSONPath on an event; nothing is logged or delivered',
      headers,
      body: {
        type: 'object',
        additionalProperties: false,
        properties: {
          jsonpath: { type: 'string', description: "JSONPath (RFC 9535 or Pacifica jsonpath2), read as a new subscription's would be" },
          event: { type: 'object', description: 'a CloudEvent in structured-mode JSON form' },
        },
        required: ['jsonpath', 'event'],
      },
      response: {
        200: tryItResult,
        ...eventmatchErrors(
          ...EVERY_ROUTE,
          ...JSON_BODY,
          'FIELD_REQUIRED',
          'FIELD_UNKNOWN',
          'FIELD_TYPE',
          'FIELD_INVALID',
          'JSONPATH_SYNTAX',
        ),
      },
    },
    trySubscription: {
      tags: TAGS,
      summary: "Try a subscription's JSONPath, in its stored dialect, on an event; nothing is logged or delivered",
      headers,
      params: uuidParams,
      body: { type: 'object', description: 'a CloudEvent in structured-mode JSON form' },
      response: { 200: tryItResult, ...eventmatchErrors(...EVERY_ROUTE, ...JSON_BODY, 'FIELD_TYPE', 'SUBSCRIPTION_NOT_FOUND') },
    },
  };
}
