/**
 * Message bodies that must be JSON: strictly UTF-8 (RFC 8259 8.1), so a broken byte is a 400
 * rather than a U+FFFD silently stored and delivered.
 */
import { serviceError } from '../errors.js';
import { type JsonValue, MAX_DOCUMENT_DEPTH, nestedDeeperThan } from '../json.js';

// JSON may drop a leading byte order mark (RFC 8259 8.1); text data keeps every character.
const withoutBom = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const asIs = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as text, or undefined when they are not valid UTF-8 (overlong forms included). */
export function decodeUtf8(bytes: Uint8Array, dropBom = false): string | undefined {
  try {
    return (dropBom ? withoutBom : asIs).decode(bytes);
  } catch {
    return undefined;
  }
}

/** `maxDepth`: how deeply the document may nest; /eventmatch/test wraps an event one level down. */
export function parseJsonBody(body: Buffer, maxDepth = MAX_DOCUMENT_DEPTH): JsonValue {
  return readJsonBody(body, maxDepth).value;
}

export interface JsonBody {
  value: JsonValue;
  /** The body as text (a leading byte order mark dropped), for those that keep what was sent. */
  text: string;
}

/** `parseJsonBody`, with the text it parsed. */
export function readJsonBody(body: Buffer, maxDepth = MAX_DOCUMENT_DEPTH): JsonBody {
  const text = decodeUtf8(body, true);
  if (text === undefined) throw serviceError('BODY_NOT_JSON', 'not valid UTF-8, which JSON requires');
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    const position = /position (\d+)/.exec(error.message)?.[1];
    throw serviceError(
      'BODY_NOT_JSON',
      text.trim() === '' ? 'not valid JSON (empty)' : `not valid JSON${position === undefined ? '' : ` (at character ${position})`}`,
    );
  }
  if (nestedDeeperThan(value, maxDepth)) throw serviceError('BODY_TOO_DEEP', 'body', maxDepth);
  return { value, text };
}
