/**
 * JSON schemas of `/eventmatch`: they validate requests (types, required and unknown fields)
 * and describe the API in /openapi.json. What a schema cannot say well (URL, JSONPath, auth
 * shapes, extension names) is checked in subscriptions/input.ts, with messages naming the field.
 */
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX } from '../subscriptions/input.js';

const TAGS = ['subscriptions'];

export const errorResponse = {
  description: 'An error; the message names the offending field',
  type: 'object',
  properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' } },
  required: ['statusCode', 'error', 'message'],
} as const;

const serviceSet = (description: string) => ({ description: `${description}; set by the service, ignored when sent` });

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
      properties: { username: { type: 'string' }, password: { type: 'string' } },
    },
    header: {
      type: 'object',
      additionalProperties: false,
      properties: {
        type: { type: 'string', description: 'the authentication scheme, e.g. Bearer' },
        credentials: { type: 'string' },
      },
    },
  },
} as const;

const extensions = {
  type: 'object',
  description:
    'CloudEvents extension attributes added to every event delivered for this subscription: names of 1 to 20 lowercase ' +
    'letters or digits (not a context attribute such as id or type), values strings, booleans or 32-bit integers',
} as const;

const writable = {
  name: { type: 'string', description: 'human-readable name; not blank' },
  jsonpath: { type: 'string', description: 'JSONPath (RFC 9535 or Pacifica jsonpath2) selecting the events to route' },
  target_url: { type: 'string', description: 'absolute http or https URL the events are POSTed to; no credentials in it' },
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

export const errors = { '4xx': errorResponse, '5xx': errorResponse };

/** `?limit=&offset=`, as query-string text (checked by parsePage, with messages naming them). */
export const pageQuerystring = (limits: { default: number; max: number }) => ({
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'string', description: `an integer from 1 to ${limits.max}; default ${limits.default}` },
    offset: { type: 'string', description: 'an integer of at least 0; default 0' },
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
      response: { 200: { ...subscriptionRecord, description: 'the new subscription; Location names it' }, ...errors },
    },
    list: {
      tags: TAGS,
      summary: "The caller's live subscriptions, oldest first",
      headers,
      querystring: pageQuerystring({ default: PAGE_LIMIT_DEFAULT, max: PAGE_LIMIT_MAX }),
      response: { 200: { type: 'array', items: subscriptionRecord }, ...errors },
    },
    get: { tags: TAGS, summary: 'A subscription', headers, params: uuidParams, response: { 200: subscriptionRecord, ...errors } },
    update: {
      tags: TAGS,
      summary: 'Change some fields of a subscription',
      headers,
      params: uuidParams,
      body: { type: 'object', additionalProperties: false, properties: { ...writable, ...ignored } },
      response: { 200: subscriptionRecord, ...errors },
    },
    remove: {
      tags: TAGS,
      summary: 'Delete a subscription (it never matches again)',
      headers,
      params: uuidParams,
      response: { 200: { ...subscriptionRecord, description: 'the final record' }, ...errors },
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
      response: { 200: tryItResult, ...errors },
    },
    trySubscription: {
      tags: TAGS,
      summary: "Try a subscription's JSONPath, in its stored dialect, on an event; nothing is logged or delivered",
      headers,
      params: uuidParams,
      body: { type: 'object', description: 'a CloudEvent in structured-mode JSON form' },
      response: { 200: tryItResult, ...errors },
    },
  };
}
