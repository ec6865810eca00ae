/**
 * A row of the events table for tests to insert: a minimal event of its own id, so a test names
 * only what it cares about, and a new column is added here once.
 */
import { randomUUID } from 'node:crypto';
import type { EventRow } from '../../src/db/stores/events.js';

export function eventRow(fields: Partial<EventRow> = {}): EventRow {
  return { uuid: randomUUID(), source: '/log', event_id: randomUUID(), type: 't', spec_version: '1.0', body: '{}', received: 1, ...fields };
}
