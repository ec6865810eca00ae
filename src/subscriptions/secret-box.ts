/**
 * Target credentials at rest. With `NOTIFICATIONS_SECRET_KEY` set, the auth JSON is sealed with
 * AES-256-GCM under the keyring's first key: `v1:` + base64(12-byte random IV ‖ 16-byte tag ‖
 * ciphertext); any key of the keyring opens it. Without a key it is stored as the plain JSON
 * text. Plain text still opens once a key is configured, so a key can be added to a
 * deployment; the server seals what it finds plain when it starts with one, and
 * `svc-notifications-cmd reseal` seals again what an older key sealed (seal-at-rest.ts).
 * Signing secrets are sealed the same way.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import type { Keyring } from '../config/keyring.js';
import { serviceError } from '../errors.js';
import { pooledRandomBytes } from '../random-bytes.js';
import type { Auth } from './input.js';

/** What every sealed value starts with. */
export const SEALED_PREFIX = 'v1:';
const ALGORITHM = 'aes-256-gcm';
// 96-bit IVs are what GCM is specified for; random ones stay safe well past 2^32 seals per key.
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function sealSecret(plain: string, keyring: Keyring | null): string {
  if (keyring === null) return plain;
  const iv = pooledRandomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, keyring.sealing, iv, { authTagLength: TAG_BYTES });
  const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
}

/** The plain text of a stored value; a ServiceError (500) when no key of `keyring` opens it. */
export function openSecret(stored: string, keyring: Keyring | null): string {
  return opened(stored, keyring).plain;
}

/**
 * `stored` sealed under the keyring's first key, or undefined when it already is. Throws the
 * ServiceError of openSecret when no key opens it.
 */
export function resealSecret(stored: string, keyring: Keyring): string | undefined {
  const { plain, key } = opened(stored, keyring);
  return key === keyring.sealing ? undefined : sealSecret(plain, keyring);
}

/** The plain text, and the key that opened it (undefined: it was stored plain). */
function opened(stored: string, keyring: Keyring | null): { plain: string; key: Buffer | undefined } {
  if (!isSealed(stored)) return { plain: stored, key: undefined };
  if (keyring === null) throw serviceError('CREDENTIALS_UNREADABLE');
  const sealed = Buffer.from(stored.slice(SEALED_PREFIX.length), 'base64');
  if (sealed.length < IV_BYTES + TAG_BYTES) throw serviceError('CREDENTIALS_UNREADABLE', 'too short to be sealed');
  for (const key of keyring.keys) {
    const decipher = createDecipheriv(ALGORITHM, key, sealed.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return { plain: Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8'), key };
    } catch {
      // Another key of the ring may have sealed it: GCM's tag refuses every key but that one.
    }
  }
  // GCM cannot tell a wrong key from altered bytes; a wrong key is by far the likelier cause.
  throw serviceError('CREDENTIALS_UNREADABLE');
}

export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED_PREFIX);
}

/** A subscription's stored `auth`, opened and parsed. */
export function openAuth(stored: string, keyring: Keyring | null): Auth {
  const plain = openSecret(stored, keyring);
  try {
    return JSON.parse(plain) as Auth;
  } catch {
    // JSON.parse's message quotes the text: the credentials themselves.
    throw serviceError('CREDENTIALS_UNREADABLE', 'not JSON');
  }
}
