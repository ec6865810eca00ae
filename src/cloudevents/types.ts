/**
 * Terms:
 * - message: one HTTP request to `/receive` (content type, headers, body bytes).
 * - mode: how the message carries events (HTTP binding 3): structured (one event as a JSON
 *   object), batched (a JSON array of them) or binary (attributes in `ce-*` headers, the body
 *   is `data`).
 * - document: an event's structured-mode JSON form, attributes at top level and `data` as a
 *   member (0.1: its own attribute names and an `extensions` object). Subscriptions are
 *   matched against it.
 * - text: the document as JSON text, which is what is stored and delivered. Producers' bytes
 *   are kept: numbers such as 12345678901234567890 or 1.50 would not survive JSON.parse and
 *   JSON.stringify, and a signature over a delivery should cover what the producer sent.
 */
import type { JsonValue } from '../json.js';

export type SpecVersion = '1.0' | '0.3' | '0.1';

export interface ReceivedEvent {
  specVersion: SpecVersion;
  /** `id` (0.1: `eventID`). */
  id: string;
  source: string;
  /** `type` (0.1: `eventType`). */
  type: string;
  /** Exactly as sent in structured and batched mode; built from the headers and body in binary mode. */
  document: JsonValue;
  /**
   * `document` as JSON text: in structured and batched mode the event object's text as received;
   * in binary mode the attributes as JSON.stringify writes them, with a JSON body as received
   * for `data`.
   */
  text: string;
}

/** An event whose document has been checked, before its text is attached. */
export type ValidatedEvent = Omit<ReceivedEvent, 'text'>;

export interface ReceivedMessage {
  /** The Content-Type header as sent, parameters included. */
  contentType: string | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface ParsedMessage {
  /** True for a batched-mode message: the answer is then an array, one entry per event. */
  batch: boolean;
  /** One event, except in a batch, which may hold any number (an empty batch none). */
  events: ReceivedEvent[];
}
