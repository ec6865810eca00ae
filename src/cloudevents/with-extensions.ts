/**
 * A subscription's extension attributes added to the event it is delivered: top-level members
 * in 1.0 and 0.3, members of the `extensions` object in the legacy 0.1 shape. An attribute the
 * event itself sets wins, so a subscriber always sees what the producer sent; a `null` member
 * is unset (JSON format 2.2) and is filled in.
 */
import type { JsonValue } from '../json.js';
import { isJsonObject, type JsonObject, type ReceivedEvent } from './types.js';

export type ExtensionValues = Record<string, string | number | boolean>;

/** A new document when something is added; the event's own document (unchanged) otherwise. */
export function withExtensions(event: ReceivedEvent, extensions: ExtensionValues): JsonValue {
  const document = event.document;
  if (!isJsonObject(document)) throw new TypeError('withExtensions: the event document is not a JSON object');
  if (event.specVersion !== '0.1') return addUnset(document, extensions) ?? document;
  const current = document.extensions;
  const bag = addUnset(isJsonObject(current) ? current : {}, extensions);
  return bag === undefined ? document : { ...document, extensions: bag };
}

function addUnset(target: JsonObject, extensions: ExtensionValues): JsonObject | undefined {
  const additions = Object.entries(extensions).filter(([name]) => !Object.hasOwn(target, name) || target[name] === null);
  if (additions.length === 0) return undefined;
  const copy: JsonObject = { ...target };
  for (const [name, value] of additions) Object.defineProperty(copy, name, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}
