/**
 * Stored secrets (target credentials, signing secrets) and the keyring of
 * NOTIFICATIONS_SECRET_KEY. With a key set, every stored secret is sealed, whenever it was
 * written: the server seals at start-up what is stored plain (credentials stored before the
 * key was configured, and the signing secrets migration 0002-signing-secrets made: a migration
 * has no key). After a key rotation, `svc-notifications-cmd reseal` seals again under the first
 * key what an older one sealed. A row is changed only if it still holds what was read, so
 * instances starting together, or a write meanwhile, are never undone.
 */
import type { Keyring } from '../config/keyring.js';
import type { DatabaseHandle } from '../db/connect.js';
import { replaceStoredSecrets, type StoredSecrets, storedSecrets, storedSecretsOf, unsealedSecrets } from '../db/stores/subscriptions.js';
import { ServiceError } from '../errors.js';
import { isSealed, resealSecret, SEALED_PREFIX, sealSecret } from './secret-box.js';

const PAGE_SIZE = 500;
/** A row found changed when reseal writes it is read again at most this many times, then left for another run. */
const RESEAL_RETRIES = 4;

/** How many subscriptions had a secret sealed. */
export async function sealStoredSecrets(database: DatabaseHandle, keyring: Keyring): Promise<number> {
  let sealedRows = 0;
  let after = '';
  for (;;) {
    const page = await unsealedSecrets(database.db, SEALED_PREFIX, after, PAGE_SIZE);
    if (page.length === 0) return sealedRows;
    const changed = await database.write(async (tx) => {
      let count = 0;
      for (const stored of page) if (await replaceStoredSecrets(tx, stored, sealedPlain(stored, keyring))) count++;
      return count;
    });
    sealedRows += changed;
    after = page.at(-1)!.uuid;
  }
}

function sealedPlain(stored: StoredSecrets, keyring: Keyring): StoredSecrets {
  const seal = (value: string) => (isSealed(value) ? value : sealSecret(value, keyring));
  return {
    uuid: stored.uuid,
    auth: seal(stored.auth),
    signing_secret: seal(stored.signing_secret),
    previous_signing_secret: stored.previous_signing_secret === null ? null : seal(stored.previous_signing_secret),
  };
}

/** The secrets of a subscription, by the names the API gives them. */
export type SecretName = 'auth' | 'signing secret' | 'previous signing secret';

export interface ResealOutcome {
  /** Subscriptions with a secret sealed again under the first key (or sealed for the first time). */
  readonly resealed: number;
  /** Subscriptions whose secrets were all sealed under the first key already. */
  readonly current: number;
  /** Subscriptions with a secret no key opens, left as they are. */
  readonly unreadable: ReadonlyArray<{ readonly uuid: string; readonly secrets: readonly SecretName[] }>;
  /** Subscriptions that changed each time they were read (a write racing every try): left for another run. */
  readonly busy: readonly string[];
}

/** Seals every stored secret under the keyring's first key (deleted subscriptions' too: they keep theirs). */
export async function resealStoredSecrets(database: DatabaseHandle, keyring: Keyring): Promise<ResealOutcome> {
  let resealed = 0;
  let current = 0;
  const unreadable: Array<{ uuid: string; secrets: SecretName[] }> = [];
  const busy: string[] = [];
  function settle(stored: StoredSecrets, plan: ResealPlan): void {
    if (plan.kind === 'unreadable') unreadable.push({ uuid: stored.uuid, secrets: plan.secrets });
    else if (plan.kind === 'current') current++;
  }
  let after = '';
  for (;;) {
    const page = await storedSecrets(database.db, after, PAGE_SIZE);
    if (page.length === 0) return { resealed, current, unreadable, busy };
    after = page.at(-1)!.uuid;
    const plans = page.map((stored) => ({ stored, plan: resealPlan(stored, keyring) }));
    for (const { stored, plan } of plans) settle(stored, plan);
    const toWrite = plans.flatMap(({ stored, plan }) => (plan.kind === 'reseal' ? [{ stored, sealed: plan.sealed }] : []));
    const raced = await database.write(async (tx) => {
      const lost: string[] = [];
      for (const { stored, sealed } of toWrite) if (!(await replaceStoredSecrets(tx, stored, sealed))) lost.push(stored.uuid);
      return lost;
    });
    resealed += toWrite.length - raced.length;
    // Changed since it was read (a write, or a server starting): read it again.
    for (const uuid of raced) if (!(await resealAgain(uuid))) busy.push(uuid);
  }

  /** false: it changed again each time. */
  async function resealAgain(uuid: string): Promise<boolean> {
    for (let tries = 0; tries < RESEAL_RETRIES; tries++) {
      const stored = await storedSecretsOf(database.db, uuid);
      if (stored === undefined) return true;
      const plan = resealPlan(stored, keyring);
      if (plan.kind !== 'reseal') {
        settle(stored, plan);
        return true;
      }
      if (await database.write((tx) => replaceStoredSecrets(tx, stored, plan.sealed))) {
        resealed++;
        return true;
      }
    }
    return false;
  }
}

type ResealPlan = { kind: 'current' } | { kind: 'reseal'; sealed: StoredSecrets } | { kind: 'unreadable'; secrets: SecretName[] };

function resealPlan(stored: StoredSecrets, keyring: Keyring): ResealPlan {
  const unreadable: SecretName[] = [];
  let changed = false;
  const reseal = (value: string, name: SecretName): string => {
    try {
      const sealed = resealSecret(value, keyring);
      if (sealed === undefined) return value;
      changed = true;
      return sealed;
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      unreadable.push(name);
      return value;
    }
  };
  const sealed: StoredSecrets = {
    uuid: stored.uuid,
    auth: reseal(stored.auth, 'auth'),
    signing_secret: reseal(stored.signing_secret, 'signing secret'),
    previous_signing_secret:
      stored.previous_signing_secret === null ? null : reseal(stored.previous_signing_secret, 'previous signing secret'),
  };
  if (unreadable.length > 0) return { kind: 'unreadable', secrets: unreadable };
  return changed ? { kind: 'reseal', sealed } : { kind: 'current' };
}
