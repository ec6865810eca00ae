/**
 * A row of the subscriptions table for tests to insert or load: every column with a plain
 * default, so a test names only what it cares about, and a new column is added here once (a
 * field stored as sent takes its initial value from its declaration, subscriptions/fields.ts).
 */
import { randomUUID } from 'node:crypto';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { COLUMN_INITIAL } from '../../src/subscriptions/fields.js';

export function subscriptionRow(overrides: Partial<SubscriptionRow> = {}): SubscriptionRow {
  return {
    uuid: randomUUID(),
    owner: 'alice',
    name: 'n',
    jsonpath: '$',
    dialect: 'rfc9535',
    delivery: 'push',
    target_url: 'http://127.0.0.1:9/',
    auth: '{}',
    extensions: '{}',
    signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    previous_signing_secret: null,
    secret_rotated: null,
    version: 'v0.1',
    created: 1,
    updated: 1,
    deleted: null,
    disabled: null,
    error: null,
    ...COLUMN_INITIAL,
    allowed_rate: null,
    notices: 0,
    ...overrides,
  };
}
