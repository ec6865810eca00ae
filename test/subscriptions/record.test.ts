import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Keyring } from '../../src/config/keyring.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { RECORD_FIELDS, RECORD_VERSION, toRecord } from '../../src/subscriptions/record.js';
import { SPECIFICATION_FIELDS } from '../support/record-fields.js';
import { sealSecret } from '../../src/subscriptions/secret-box.js';
import { subscriptionRow } from '../support/subscription-row.js';

const auth = { type: 'header', header: { type: 'Bearer', credentials: 'abc' } };
const row = (changes: Partial<SubscriptionRow> = {}): SubscriptionRow =>
  subscriptionRow({
    uuid: '6f1c2d3e-4b5a-4c6d-8e7f-8091a2b3c4d5',
    jsonpath: '$.data',
    target_url: 'https://example.org/',
    auth: JSON.stringify(auth),
    extensions: '{"project":"1234","n":5,"flag":false}',
    version: RECORD_VERSION,
    created: Date.UTC(2024, 1, 29, 23, 59, 58) * 1000 + 7,
    updated: Date.UTC(2024, 1, 29, 23, 59, 59) * 1000 + 999_999,
    ...changes,
  });

describe('subscription record', () => {
  it("has the spec's fields first, in its order, then the service's own, in the declaration's", () => {
    const record = toRecord(row(), null);
    assert.deepEqual(Object.keys(record), RECORD_FIELDS);
    assert.deepEqual(RECORD_FIELDS.slice(0, SPECIFICATION_FIELDS.length), SPECIFICATION_FIELDS);
    for (const field of ['rate_limit', 'delivery', 'notices']) assert.ok(RECORD_FIELDS.includes(field as never), field);
  });

  it('formats timestamps with microseconds and no zone, and keeps nulls', () => {
    const record = toRecord(row(), null);
    assert.equal(record.created, '2024-02-29T23:59:58.000007');
    assert.equal(record.updated, '2024-02-29T23:59:59.999999');
    assert.equal(record.deleted, null);
    assert.equal(record.disabled, null);
    assert.equal(record.version, 'v0.1');
    assert.equal(record.user, 'alice');
    const stopped = toRecord(row({ deleted: 1_000_000, disabled: 1, error: 'target answered 404' }), null);
    assert.equal(stopped.deleted, '1970-01-01T00:00:01.000000');
    assert.equal(stopped.disabled, '1970-01-01T00:00:00.000001');
    assert.equal(stopped.error, 'target answered 404');
  });

  it('shows notices, stored 0 or 1, as a boolean', () => {
    assert.equal(toRecord(row(), null).notices, false);
    assert.equal(toRecord(row({ notices: 1 }), null).notices, true);
  });

  it('opens auth and parses extensions', () => {
    const key = new Keyring([randomBytes(32)]);
    assert.deepEqual(toRecord(row({ auth: sealSecret(JSON.stringify(auth), key) }), key).auth, auth);
    assert.deepEqual(toRecord(row(), key).auth, auth);
    assert.deepEqual(toRecord(row(), null).extensions, { project: '1234', n: 5, flag: false });
  });
});
