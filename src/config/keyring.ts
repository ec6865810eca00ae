/**
 * The keys of NOTIFICATIONS_SECRET_KEY, in the order given: the first seals every secret stored
 * from now on, and any of them opens one. Listing a new key first and the old one after it
 * lets the service read what the old key sealed until `svc-notifications-cmd reseal` has sealed
 * it again under the new one; then the old key can be dropped.
 */
export class Keyring {
  readonly keys: readonly Buffer[];

  constructor(keys: readonly Buffer[]) {
    if (keys.length === 0) throw new Error('a keyring needs at least one key');
    for (const key of keys) if (key.length !== KEY_BYTES) throw new Error(`secret key must be ${KEY_BYTES} bytes, got ${key.length}`);
    this.keys = [...keys];
  }

  /** The key new seals use. */
  get sealing(): Buffer {
    return this.keys[0]!;
  }
}

/** AES-256. */
export const KEY_BYTES = 32;
