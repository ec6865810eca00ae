/**
 * Signing secrets as Standard Webhooks writes them: `whsec_` followed by the base64 of the
 * HMAC-SHA256 key. Made here (32 random bytes), or given by the owner on rotation.
 */
import type { Keyring } from '../config/keyring.js';
import type { SubscriptionRow } from '../db/tables.js';
import { serviceError } from '../errors.js';
import { pooledRandomBytes } from '../random-bytes.js';
import { openSecret } from './secret-box.js';

export const SECRET_PREFIX = 'whsec_';
const GENERATED_KEY_BYTES = 32;
/** A given key: 192 bits at least; at most one SHA-256 block, beyond which HMAC hashes the key first. */
export const GIVEN_KEY_MIN_BYTES = 24;
export const GIVEN_KEY_MAX_BYTES = 64;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function generateSigningSecret(): string {
  return SECRET_PREFIX + pooledRandomBytes(GENERATED_KEY_BYTES).toString('base64');
}

/** A secret an owner sent as `field`: 400 (FIELD_TYPE, FIELD_INVALID) unless it is `whsec_` + base64 of 24–64 bytes. */
export function validateGivenSecret(value: unknown, field: string): string {
  if (typeof value !== 'string') throw serviceError('FIELD_TYPE', field, 'a string');
  // The messages never repeat the value: it is a secret.
  const encoded = value.startsWith(SECRET_PREFIX) ? value.slice(SECRET_PREFIX.length) : undefined;
  if (encoded === undefined || !BASE64.test(encoded))
    throw serviceError('FIELD_INVALID', field, `must be "${SECRET_PREFIX}" followed by base64 (standard alphabet, padded)`);
  const bytes = Buffer.from(encoded, 'base64').length;
  if (bytes < GIVEN_KEY_MIN_BYTES || bytes > GIVEN_KEY_MAX_BYTES)
    throw serviceError(
      'FIELD_INVALID',
      field,
      `the key after "${SECRET_PREFIX}" must be ${GIVEN_KEY_MIN_BYTES} to ${GIVEN_KEY_MAX_BYTES} bytes (found ${bytes})`,
    );
  return value;
}

/**
 * The secrets that sign a delivery of `row` at `now` (µs), newest first: the current one, and
 * the one it replaced while the rotation is less than `overlapUs` old. Throws the ServiceError
 * of openSecret when one does not open with `keyring`.
 */
export function signingSecretsAt(row: SubscriptionRow, now: number, keyring: Keyring | null, overlapUs: number): string[] {
  const secrets = [openSecret(row.signing_secret, keyring)];
  if (row.previous_signing_secret !== null && row.secret_rotated !== null && now < row.secret_rotated + overlapUs)
    secrets.push(openSecret(row.previous_signing_secret, keyring));
  return secrets;
}
