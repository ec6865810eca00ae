/**
 * Target credentials at rest. With `NOTIFICATIONS_SECRET_KEY` set, the auth JSON is sealed with
 * AES-256-GCM: `v1:` + base64(12-byte random IV ‖ 16-byte tag ‖ ciphertext). Without a key it
 * is stored as the plain JSON text. Plain text still opens once a key is configured, so a key
 * can be added to a deployment; the server seals what it finds plain when it starts with one
 * (seal-at-rest.ts). Signing secrets are sealed the same way.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { serviceError } from '../errors.js';
import { pooledRandomBytes } from '../random-bytes.js';
import type { Auth } from './input.js';

/** What every sealed value starts with. */
export const SEALED_PREFIX = 'v1:';
const ALGORITHM = 'aes-256-gcm';
// 96-bit IVs are what GCM is specified for; random ones stay safe well past 2^32 seals per key.
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export function sealSecret(plain: string, key: Buffer | null): string {
  if (key === null) return plain;
  checkKey(key);
  const iv = pooledRandomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** The plain text of a stored value; a ServiceError (500) when it cannot be opened with `key`. */
export function openSecret(stored: string, key: Buffer | null): string {
  if (!isSealed(stored)) return stored;
  if (key === null) throw serviceError('CREDENTIALS_UNREADABLE');
  checkKey(key);
  const sealed = Buffer.from(stored.slice(SEALED_PREFIX.length), 'base64');
  if (sealed.length < IV_BYTES + TAG_BYTES) throw serviceError('CREDENTIALS_UNREADABLE', 'too short to be sealed');
  const decipher = createDecipheriv(ALGORITHM, key, sealed.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    // GCM cannot tell a wrong key from altered bytes; a wrong key is by far the likelier cause.
    throw serviceError('CREDENTIALS_UNREADABLE');
  }
}

export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED_PREFIX);
}

function checkKey(key: Buffer): void {
  if (key.length !== KEY_BYTES) throw new Error(`secret key must be ${KEY_BYTES} bytes, got ${key.length}`);
}

/** A subscription's stored `auth`, opened and parsed. */
export function openAuth(stored: string, key: Buffer | null): Auth {
  const plain = openSecret(stored, key);
  try {
    return JSON.parse(plain) as Auth;
  } catch {
    // JSON.parse's message quotes the text: the credentials themselves.
    throw serviceError('CREDENTIALS_UNREADABLE', 'not JSON');
  }
}
