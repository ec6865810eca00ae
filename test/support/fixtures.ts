/**
 * What the tests read besides their own code: the facility's example event (the project's copy,
 * which the README sends too) and the RFC 9535 compliance suite, which lives outside the project
 * and is found through NOTIFICATIONS_TEST_JSONPATH_CTS (a path, relative to the project root or
 * absolute). Without that variable, the suites that need it are reported as skipped, with why.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { JsonValue } from '../../src/json.js';
import { ROOT } from './project.js';

export const FACILITY_EVENT_FILE = resolve(ROOT, 'docs/examples/pacifica-ingest-event-v0.1.json');

/** The facility's event as its file holds it: the text a person pastes, or a producer sends. */
export const facilityEventText = (): string => readFileSync(FACILITY_EVENT_FILE, 'utf8');

export const facilityEvent = (): JsonValue => JSON.parse(facilityEventText()) as JsonValue;

/** The same event under another id, byte for byte otherwise (the log takes each (source, id) once). */
export function facilityEventTextWithId(id: string): string {
  const text = facilityEventText();
  const own = '"C234-1234-1234"';
  if (!text.includes(own)) throw new Error(`${FACILITY_EVENT_FILE} no longer has the id ${own}`);
  return text.replace(own, JSON.stringify(id));
}

const CTS_VARIABLE = 'NOTIFICATIONS_TEST_JSONPATH_CTS';
const CTS_PATH = process.env[CTS_VARIABLE] ? resolve(ROOT, process.env[CTS_VARIABLE]) : undefined;

/** Why the compliance suite's tests cannot run here; false when they can. */
export const JSONPATH_CTS_SKIP: string | false =
  CTS_PATH === undefined
    ? `the RFC 9535 compliance suite: set ${CTS_VARIABLE} to its cts.json`
    : existsSync(CTS_PATH)
      ? false
      : `the RFC 9535 compliance suite: ${CTS_VARIABLE} names ${CTS_PATH}, which does not exist`;

export interface CtsCase {
  name: string;
  selector: string;
  invalid_selector?: boolean;
  document?: JsonValue;
  result?: JsonValue[];
  results?: JsonValue[][];
  result_paths?: string[];
  results_paths?: string[][];
}

/** The compliance suite's cases; only where JSONPATH_CTS_SKIP is false. */
export function jsonpathCts(): CtsCase[] {
  if (CTS_PATH === undefined || JSONPATH_CTS_SKIP) throw new Error(`${JSONPATH_CTS_SKIP}: this suite should have been skipped`);
  return (JSON.parse(readFileSync(CTS_PATH, 'utf8')) as { tests: CtsCase[] }).tests;
}
