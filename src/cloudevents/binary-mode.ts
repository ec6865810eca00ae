/**
 * Binary mode (HTTP binding 3.1): attributes in `ce-*` headers, `data` in the body,
 * `datacontenttype` in Content-Type. The event is turned into its structured JSON form, the
 * one document every later stage works on; a JSON body is kept as sent in its text.
 */
import { serviceError } from '../errors.js';
import type { JsonObject, JsonValue } from '../json.js';
import { decodeUtf8, readJsonBody } from '../request-body/json-body.js';
import { declaresUtf8OrNothing, isJsonMediaType, type MediaType, requireUtf8Json } from '../request-body/media-type.js';
import { objectText, valueSpan } from './json-text.js';
import type { ReceivedEvent, ReceivedMessage } from './types.js';
import { type Label, unsupportedSpecversion, validateEvent } from './validate-event.js';

const PREFIX = 'ce-';

/** The `ce-specversion` header, when the message carries one. */
export function binarySpecversion(headers: ReceivedMessage['headers']): string | string[] | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === `${PREFIX}specversion` && value !== undefined) return value;
  }
  return undefined;
}

export function parseBinary(message: ReceivedMessage, type: MediaType): ReceivedEvent {
  const attributes = headerAttributes(message.headers);
  const specversion = attributes.get('specversion') ?? '';
  if (specversion !== '1.0' && specversion !== '0.3') throw unsupportedSpecversion(specversion, label('specversion'));
  for (const name of ['data', 'data_base64']) {
    if (attributes.has(name))
      throw serviceError('CLOUDEVENT_INVALID', `${PREFIX}${name}`, 'not an attribute; in binary mode the body is the data');
  }
  if (attributes.has('datacontenttype')) {
    throw serviceError(
      'CLOUDEVENT_INVALID',
      'ce-datacontenttype',
      'not allowed in binary mode; the Content-Type header carries the media type of the body',
    );
  }

  const document: JsonObject = {};
  for (const name of ['specversion', 'id', 'source', 'type']) {
    const value = attributes.get(name);
    if (value !== undefined) setMember(document, name, value);
  }
  for (const [name, value] of attributes) {
    if (!Object.hasOwn(document, name)) setMember(document, name, value);
  }
  if (message.contentType !== undefined && message.contentType !== '') document.datacontenttype = message.contentType;
  const { members, sourceText } = data(message.body, type, specversion);
  for (const [name, value] of Object.entries(members)) document[name] = value;
  const event = validateEvent(document, label);
  return { ...event, text: objectText(document, sourceText === undefined ? new Map() : new Map([['data', sourceText]])) };
}

// A header named `ce-__proto__` must become a member (and be refused as a name), not a prototype.
function setMember(document: JsonObject, name: string, value: JsonValue): void {
  Object.defineProperty(document, name, { value, enumerable: true, writable: true, configurable: true });
}

const label: Label = (attribute) => {
  if (attribute === 'datacontenttype') return 'content-type';
  if (attribute === 'data' || attribute === 'data_base64') return 'body';
  return `${PREFIX}${attribute}`;
};

/**
 * JSON event format 3.1: JSON media types become a JSON value, UTF-8 text a string, anything
 * else base64 (`data_base64` in 1.0; in 0.3 `data` with `datacontentencoding`). An empty body
 * is an event without data.
 */
function data(body: Buffer, type: MediaType, specversion: '1.0' | '0.3'): { members: JsonObject; sourceText?: string } {
  if (body.length === 0) return { members: {} };
  if (isJsonMediaType(type)) {
    requireUtf8Json(type);
    const { value, text } = readJsonBody(body);
    const { start, end } = valueSpan(text);
    // The body's text, not JSON.stringify's rewrite of it, is what `data` is delivered as.
    return { members: { data: value }, sourceText: text.slice(start, end) };
  }
  if (type.essence.startsWith('text/') && (declaresUtf8OrNothing(type) || type.parameters.charset?.toLowerCase() === 'us-ascii')) {
    const text = decodeUtf8(body);
    if (text !== undefined) return { members: { data: text } };
  }
  const encoded = body.toString('base64');
  return { members: specversion === '1.0' ? { data_base64: encoded } : { datacontentencoding: 'base64', data: encoded } };
}

function headerAttributes(headers: ReceivedMessage['headers']): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const [header, raw] of Object.entries(headers)) {
    const lower = header.toLowerCase();
    if (!lower.startsWith(PREFIX) || raw === undefined) continue;
    const name = lower.slice(PREFIX.length);
    // Node joins repeated custom headers with ", ", so only a hand-built record can get here twice.
    if (attributes.has(name) || (Array.isArray(raw) && raw.length !== 1)) {
      throw serviceError('CLOUDEVENT_INVALID', lower, 'sent more than once; each attribute appears at most once');
    }
    attributes.set(name, decodeHeaderValue(Array.isArray(raw) ? (raw[0] as string) : raw, lower));
  }
  return attributes;
}

/**
 * HTTP binding 3.1.3.2: undo double-quoted strings first, then one round of percent-decoding,
 * refusing byte sequences that are not UTF-8 (overlong forms included). Node hands header
 * bytes over as latin1 characters, so raw UTF-8 sent without percent-encoding decodes too.
 */
function decodeHeaderValue(value: string, header: string): string {
  const chars = Array.from(unquote(value, header));
  const bytes: number[] = [];
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] as string;
    if (char === '%') {
      const hex = `${chars[i + 1] ?? ''}${chars[i + 2] ?? ''}`;
      if (!/^[0-9A-Fa-f]{2}$/.test(hex))
        throw serviceError('CLOUDEVENT_INVALID', header, '"%" must start a percent-encoded byte such as %20 (use %25 for "%")');
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else if (char.length === 1 && char.charCodeAt(0) <= 0xff) {
      bytes.push(char.charCodeAt(0));
    } else {
      bytes.push(...Buffer.from(char, 'utf8'));
    }
  }
  const decoded = decodeUtf8(Uint8Array.from(bytes));
  if (decoded === undefined) throw serviceError('CLOUDEVENT_INVALID', header, 'not valid UTF-8 once percent-decoded');
  return decoded;
}

function unquote(value: string, header: string): string {
  if (!value.includes('"')) return value;
  let result = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const char = value[i] as string;
    if (char === '"') quoted = !quoted;
    else if (quoted && char === '\\' && i + 1 < value.length) result += value[++i];
    else result += char;
  }
  if (quoted) throw serviceError('CLOUDEVENT_INVALID', header, 'unterminated quoted string');
  return result;
}
