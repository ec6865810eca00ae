/**
 * One event's structured JSON form, checked against its spec version: required attributes,
 * attribute types, extension names. Each failure is a 400 naming the attribute through
 * `label`, so a batch can say `[2].id` and binary mode `ce-id`. Nothing is normalised.
 *
 * Strictness differs by version on purpose: 1.0 gets its full type system; 0.3 and the legacy
 * 0.1 shape (what the facility's metadata service still sends) get the checks their specs make
 * and no more, so that events the original service accepted are not refused now.
 */
import { type ServiceError, serviceError } from '../errors.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json.js';
import { isMediaType } from '../request-body/media-type.js';
import { isAbsoluteUri, isBase64, isCloudEventsString, isInt32, isRfc3339, isUriReference } from './attribute-types.js';
import { OPERATIONAL_SOURCE } from '../operational-source.js';
import type { ValidatedEvent } from './types.js';

export type Label = (attribute: string) => string;

const ACCEPTED = '(1.0, 0.3 and the legacy 0.1 are accepted)';
/**
 * `source` and `id` identify an event in the log (a unique index on the pair): PostgreSQL
 * refuses an index entry past ~2.7 KB, so each is held to 1 KiB (an id is usually a uuid, a
 * source a short URI). Longer ones are a 400 naming the attribute, on both databases alike.
 */
const MAX_IDENTITY_BYTES = 1_024;
const INT32_RANGE = '-2147483648 to 2147483647';
const NOT_A_STRING = 'must not contain control characters, unpaired surrogates or Unicode noncharacters (CloudEvents String)';

export function validateEvent(document: JsonObject, label: Label): ValidatedEvent {
  const specversion = present(document.specversion);
  if (specversion === undefined && present(document.cloudEventsVersion) !== undefined) return validateV01(document, label);
  if (specversion === undefined) throw invalid(label('specversion'), 'required');
  if (specversion === '1.0' || specversion === '0.3') return validateV1OrV03(document, specversion, label);
  throw unsupportedSpecversion(specversion, label('specversion'));
}

export function unsupportedSpecversion(specversion: JsonValue, field: string): ServiceError {
  if (specversion === '0.1') {
    return invalid(field, '0.1 events carry cloudEventsVersion, eventID and eventType instead (the legacy 0.1 shape, structured mode)');
  }
  return invalid(field, `unsupported version ${JSON.stringify(specversion)} ${ACCEPTED}`);
}

const V1_ATTRIBUTES = new Set(['specversion', 'id', 'source', 'type', 'datacontenttype', 'dataschema', 'subject', 'time']);
const V03_ATTRIBUTES = new Set([
  'specversion',
  'id',
  'source',
  'type',
  'datacontenttype',
  'schemaurl',
  'subject',
  'time',
  'datacontentencoding',
]);
// Both versions only recommend at most 20 characters ("SHOULD NOT exceed"): a receiver takes
// longer names, as the CloudEvents SDKs send them. Names subscriptions add keep the limit.
const EXTENSION_NAME = /^[a-z0-9]+$/;

function validateV1OrV03(document: JsonObject, version: '1.0' | '0.3', label: Label): ValidatedEvent {
  const v1 = version === '1.0';
  const id = requiredString(document, 'id', label, v1);
  const source = present(document.source);
  if (source === undefined) throw invalid(label('source'), 'required');
  if (typeof source !== 'string' || source === '' || !isUriReference(source)) {
    throw invalid(label('source'), 'must be a non-empty URI-reference');
  }
  const type = requiredString(document, 'type', label, v1);
  checkIdentityLength(id, label('id'));
  checkIdentityLength(source, label('source'));
  checkNotOperational(source, label('source'));

  const datacontenttype = optionalString(document, 'datacontenttype', label);
  if (datacontenttype !== undefined && !isMediaType(datacontenttype)) {
    throw invalid(label('datacontenttype'), 'must be a media type such as "application/json" (RFC 2046)');
  }
  const subject = optionalString(document, 'subject', label);
  if (subject === '') throw invalid(label('subject'), 'must be a non-empty string');
  if (v1 && subject !== undefined && !isCloudEventsString(subject)) throw invalid(label('subject'), NOT_A_STRING);
  const time = optionalString(document, 'time', label);
  if (time !== undefined && !isRfc3339(time)) throw invalid(label('time'), 'not an RFC 3339 timestamp');

  if (v1) {
    const dataschema = optionalString(document, 'dataschema', label);
    if (dataschema !== undefined && !isAbsoluteUri(dataschema)) throw invalid(label('dataschema'), 'must be a non-empty absolute URI');
    validateDataBase64(document, label);
  } else {
    const schemaurl = optionalString(document, 'schemaurl', label);
    if (schemaurl !== undefined && (schemaurl === '' || !isUriReference(schemaurl))) {
      throw invalid(label('schemaurl'), 'must be a non-empty URI-reference');
    }
    validateContentEncoding(document, label);
  }

  const known = v1 ? V1_ATTRIBUTES : V03_ATTRIBUTES;
  for (const [name, value] of Object.entries(document)) {
    if (name === 'data' || (v1 && name === 'data_base64') || known.has(name)) continue;
    validateExtension(name, value, version, label);
  }
  return { specVersion: version, id, source, type, document };
}

function validateDataBase64(document: JsonObject, label: Label): void {
  const encoded = present(document.data_base64);
  if (encoded === undefined) return;
  if (typeof encoded !== 'string' || !isBase64(encoded)) throw invalid(label('data_base64'), 'must be a base64 string (RFC 4648)');
  if (document.data !== undefined) throw invalid(label('data_base64'), 'not allowed together with data; send one of them');
}

/** 0.3 `datacontentencoding`: RFC 2045 names several encodings, CloudEvents defines only Base64. */
function validateContentEncoding(document: JsonObject, label: Label): void {
  const encoding = optionalString(document, 'datacontentencoding', label);
  if (encoding === undefined) return;
  if (encoding.toLowerCase() !== 'base64')
    throw invalid(label('datacontentencoding'), 'must be "base64", the only encoding CloudEvents 0.3 defines');
  const data = present(document.data);
  if (data !== undefined && (typeof data !== 'string' || !isBase64(data))) {
    throw invalid(label('data'), 'must be a base64 string when datacontentencoding is "base64"');
  }
}

function validateExtension(name: string, value: JsonValue, version: '1.0' | '0.3', label: Label): void {
  const field = label(name === '' ? '""' : name);
  if (!EXTENSION_NAME.test(name)) {
    throw invalid(field, `extension attribute names are lowercase letters (a-z) or digits (CloudEvents ${version})`);
  }
  if (value === null || typeof value === 'boolean') return;
  if (typeof value === 'string') {
    if (version === '1.0' && !isCloudEventsString(value)) throw invalid(field, NOT_A_STRING);
    return;
  }
  if (typeof value === 'number') {
    if (!isInt32(value)) throw invalid(field, `numbers in attributes must be integers from ${INT32_RANGE} (CloudEvents Integer)`);
    return;
  }
  // 0.3 has a Map type; 1.0 dropped it.
  if (version === '0.3' && isJsonObject(value)) return;
  const allowed = version === '1.0' ? 'a string, a boolean or an integer' : 'a string, a boolean, an integer or an object';
  throw invalid(field, `an extension attribute must be ${allowed}`);
}

function validateV01(document: JsonObject, label: Label): ValidatedEvent {
  const version = document.cloudEventsVersion;
  if (version !== '0.1') throw invalid(label('cloudEventsVersion'), `unsupported version ${JSON.stringify(version)} ${ACCEPTED}`);
  const id = requiredString(document, 'eventID', label, false);
  const type = requiredString(document, 'eventType', label, false);
  const source = requiredString(document, 'source', label, false);
  checkIdentityLength(id, label('eventID'));
  checkIdentityLength(source, label('source'));
  checkNotOperational(source, label('source'));
  const eventTime = optionalString(document, 'eventTime', label);
  if (eventTime !== undefined && !isRfc3339(eventTime)) throw invalid(label('eventTime'), 'not an RFC 3339 timestamp');
  for (const name of ['eventTypeVersion', 'schemaURL', 'contentType']) optionalString(document, name, label);
  const extensions = present(document.extensions);
  if (extensions !== undefined && !isJsonObject(extensions)) throw invalid(label('extensions'), 'must be an object');
  return { specVersion: '0.1', id, source, type, document };
}

function checkIdentityLength(value: string, field: string): void {
  const bytes = Buffer.byteLength(value);
  if (bytes > MAX_IDENTITY_BYTES)
    throw invalid(field, `at most ${MAX_IDENTITY_BYTES} bytes as UTF-8 (found ${bytes}); it identifies the event in the log`);
}

/** JSON event format 2.2: a `null` attribute is the same as an absent one. */
function present(value: JsonValue | undefined): JsonValue | undefined {
  return value === null ? undefined : value;
}

function requiredString(document: JsonObject, name: string, label: Label, cloudEventsString: boolean): string {
  const value = present(document[name]);
  if (value === undefined) throw invalid(label(name), 'required');
  if (typeof value !== 'string') throw invalid(label(name), 'must be a string');
  if (value === '') throw invalid(label(name), 'must be a non-empty string');
  if (cloudEventsString && !isCloudEventsString(value)) throw invalid(label(name), NOT_A_STRING);
  return value;
}

function optionalString(document: JsonObject, name: string, label: Label): string | undefined {
  const value = present(document[name]);
  if (value !== undefined && typeof value !== 'string') throw invalid(label(name), 'must be a string');
  return value;
}

function invalid(field: string, problem: string): ServiceError {
  return serviceError('CLOUDEVENT_INVALID', field, problem);
}

/** Events from the service's own source tell owners of their subscriptions: a producer may not send them. */
function checkNotOperational(source: string, field: string): void {
  if (source === OPERATIONAL_SOURCE)
    throw invalid(field, `${OPERATIONAL_SOURCE} is the service's own source, for the events it emits itself`);
}
