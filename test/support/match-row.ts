/**
 * A row of the matches table for tests to insert: every column with a plain default (a delivery
 * waiting for its policy check, due when it was created), so a test names only what it cares
 * about, and a new column is added here once.
 */
import { randomUUID } from 'node:crypto';
import type { MatchRow } from '../../src/db/stores/events.js';

export function matchRow(fields: Pick<MatchRow, 'event_uuid' | 'subscription_uuid'> & Partial<MatchRow>): MatchRow {
  const created = fields.created ?? 1;
  return {
    uuid: randomUUID(),
    owner: 'alice',
    state: 'policy',
    policy_code: null,
    target_code: null,
    created,
    due: created,
    locked_until: null,
    locked_by: null,
    attempts: 0,
    updated: created,
    cursor: null,
    ...fields,
  };
}
