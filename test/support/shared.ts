import { readFileSync } from 'node:fs';
import type { JsonValue } from '../../src/json.js';

/** `../shared/` beside the project root; tests run from dist/test/, three levels below the root. */
const SHARED = new URL('../../../../shared/', import.meta.url);

export function readShared<T = JsonValue>(relative: string): T {
  return JSON.parse(readFileSync(new URL(relative, SHARED), 'utf8')) as T;
}

export const facilityEvent = (): JsonValue => readShared('fixtures/pacifica-ingest-event-v0.1.json');

/** The facility's event as its file holds it: the text a person pastes, or a producer sends. */
export const facilityEventText = (): string => readFileSync(new URL('fixtures/pacifica-ingest-event-v0.1.json', SHARED), 'utf8');
