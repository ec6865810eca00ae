/**
 * With NOTIFICATIONS_SECRET_KEY set, every stored secret is sealed, whenever it was written:
 * credentials stored before the key was configured, and the signing secrets migration
 * 0002-signing-secrets made (a migration has no key). Run once at start-up; a row is changed
 * only if it still holds what was read, so instances starting together do not undo each other.
 */
import type { DatabaseHandle } from '../db/connect.js';
import { replaceStoredSecrets, type StoredSecrets, unsealedSecrets } from '../db/subscriptions.js';
import { isSealed, SEALED_PREFIX, sealSecret } from './secret-box.js';

const PAGE_SIZE = 500;

/** How many subscriptions had a secret sealed. */
export async function sealStoredSecrets(database: DatabaseHandle, key: Buffer): Promise<number> {
  let sealedRows = 0;
  let after = '';
  for (;;) {
    const page = await unsealedSecrets(database.db, SEALED_PREFIX, after, PAGE_SIZE);
    if (page.length === 0) return sealedRows;
    const changed = await database.write(async (tx) => {
      let count = 0;
      for (const stored of page) if (await replaceStoredSecrets(tx, stored, sealed(stored, key))) count++;
      return count;
    });
    sealedRows += changed;
    after = page.at(-1)!.uuid;
  }
}

function sealed(stored: StoredSecrets, key: Buffer): StoredSecrets {
  const seal = (value: string) => (isSealed(value) ? value : sealSecret(value, key));
  return {
    uuid: stored.uuid,
    auth: seal(stored.auth),
    signing_secret: seal(stored.signing_secret),
    previous_signing_secret: stored.previous_signing_secret === null ? null : seal(stored.previous_signing_secret),
  };
}
