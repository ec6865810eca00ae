/**
 * The fields of a subscription record, in the order the answers give them: the specification's,
 * then `rate_limit`, `delivery` and `notices`. Written out here, not taken from src/, so the tests that compare against it
 * fail when the service's list changes.
 */
export const EXPECTED_RECORD_FIELDS: readonly string[] = [
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
  'rate_limit',
  'delivery',
  'notices',
];
