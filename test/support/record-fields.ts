/**
 * The fields of a subscription record, in the order the answers give them: those the service
 * declares (src/subscriptions/fields.ts). The specification's own come first, in its order:
 * written out here, not taken from src/, so that a declaration that moves or drops one fails
 * (test/subscriptions/record.test.ts).
 */
import { RECORD_FIELDS } from '../../src/subscriptions/fields.js';

export const SPECIFICATION_FIELDS: readonly string[] = [
  'user',
  'uuid',
  'name',
  'jsonpath',
  'target_url',
  'auth',
  'extensions',
  'created',
  'updated',
  'deleted',
  'disabled',
  'version',
  'error',
];

export const EXPECTED_RECORD_FIELDS: readonly string[] = RECORD_FIELDS;
