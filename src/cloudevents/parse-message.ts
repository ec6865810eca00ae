/**
 * The HTTP binding's mode choice (section 3): the Content-Type says structured or batched;
 * otherwise a `ce-specversion` header says binary; otherwise an `application/json` body that is
 * an event object is taken as structured, which is how many producers post events.
 */
import { type ServiceError, serviceError } from '../errors.js';
import { isJsonObject } from '../json.js';
import { type JsonBody, readJsonBody } from '../request-body/json-body.js';
import { type MediaType, parseMediaType, requireUtf8Json } from '../request-body/media-type.js';
import { binarySpecversion, parseBinary } from './binary-mode.js';
import { arrayElements, type Span, valueSpan } from './json-text.js';
import type { ParsedMessage, ReceivedEvent, ReceivedMessage } from './types.js';
import { validateEvent } from './validate-event.js';

const STRUCTURED = 'application/cloudevents+json';
const BATCHED = 'application/cloudevents-batch+json';
const HOW =
  'send a structured, binary or batched CloudEvent (Content-Type application/cloudevents+json, ce-* headers, or application/cloudevents-batch+json)';

export function parseReceived(message: ReceivedMessage): ParsedMessage {
  const type = parseMediaType(message.contentType);
  if (type.essence === STRUCTURED) return { batch: false, events: [parseStructured(readJson(message.body, type))] };
  if (type.essence === BATCHED) return { batch: true, events: parseBatch(readJson(message.body, type)) };
  if (binarySpecversion(message.headers) !== undefined) return { batch: false, events: [parseBinary(message, type)] };
  if (type.essence === 'application/json') {
    const body = readJson(message.body, type);
    const { value } = body;
    if (isJsonObject(value) && (Object.hasOwn(value, 'specversion') || Object.hasOwn(value, 'cloudEventsVersion'))) {
      return { batch: false, events: [parseStructured(body)] };
    }
    throw unsupported('"application/json" holding no event object (no specversion member) and no ce-specversion header');
  }
  const shown = type.essence === '' ? '(no Content-Type)' : JSON.stringify(type.essence);
  throw unsupported(`${shown} without a ce-specversion header`);
}

function unsupported(what: string): ServiceError {
  return serviceError('MEDIA_TYPE_UNSUPPORTED', `unsupported media type ${what}`, HOW);
}

function readJson(body: Buffer, type: MediaType): JsonBody {
  requireUtf8Json(type);
  return readJsonBody(body);
}

/** The event object's text as received is the event's text (whitespace around it left out). */
function parseStructured({ value, text }: JsonBody): ReceivedEvent {
  if (Array.isArray(value))
    throw serviceError('CLOUDEVENT_INVALID', 'body', `must be a JSON object (one event); send a JSON array as ${BATCHED}`);
  if (!isJsonObject(value)) throw serviceError('CLOUDEVENT_INVALID', 'body', 'must be a JSON object (one event)');
  const { start, end } = valueSpan(text);
  return { ...validateEvent(value, (attribute) => attribute), text: text.slice(start, end) };
}

/** An empty array is a valid batch (JSON format 4.3) and yields no events. */
function parseBatch({ value, text }: JsonBody): ReceivedEvent[] {
  if (!Array.isArray(value)) throw serviceError('CLOUDEVENT_INVALID', 'body', `must be a JSON array of events (${BATCHED})`);
  const spans = arrayElements(text);
  const events = value.map((member, index): ReceivedEvent => {
    if (!isJsonObject(member)) throw serviceError('CLOUDEVENT_INVALID', `[${index}]`, 'must be an event object');
    const { start, end } = spans[index] as Span;
    return { ...validateEvent(member, (attribute) => `[${index}].${attribute}`), text: text.slice(start, end) };
  });
  // HTTP binding 3.3.2: all events of a batch MUST have the same specversion.
  const first = events[0]?.specVersion;
  events.forEach((event, index) => {
    if (event.specVersion !== first) {
      const name = event.specVersion === '0.1' ? 'cloudEventsVersion' : 'specversion';
      throw serviceError(
        'CLOUDEVENT_INVALID',
        `[${index}].${name}`,
        `every event in a batch must have the same spec version as [0] (${first})`,
      );
    }
  });
  return events;
}
