/**
 * The subscription operations behind `/eventmatch`, for one acting user at a time. A
 * subscription that is missing, deleted, or someone else's is "not found", whichever it is.
 */
import { randomUUID } from 'node:crypto';
import type { Keyring } from '../config/keyring.js';
import { batchedOperation } from '../db/batched-write.js';
import type { DatabaseHandle } from '../db/connect.js';
import { endRuns } from '../db/stores/failure-runs.js';
import { cancelPendingMatches } from '../db/stores/matches.js';
import { logNotices, type NoticeEvents } from '../db/stores/subscription-notices.js';
import {
  deleteSubscription,
  findLiveSubscription,
  heldDisabledState,
  SUBSCRIPTION_ROWS_PER_STATEMENT,
  listLiveSubscriptions,
  rotateSigningSecret,
  type SubscriptionChange,
  type SubscriptionChanges,
  updateSubscription,
} from '../db/stores/subscriptions.js';
import type { SubscriptionRow } from '../db/tables.js';
import { kindOfTarget, refusedAuthTypes } from '../destinations/kinds.js';
import { serviceError, subscriptionNotFound } from '../errors.js';
import type { JsonValue } from '../json.js';
import { compileJsonPath, type Dialect, type DialectMode, type Selection } from '../jsonpath/index.js';
import type { ExpectedNotifications } from '../db/expected-notifications.js';
import type { AddressGuard } from '../net/address-guard.js';
import type { Clock } from '../time/clock.js';
import { canonicalUuid } from '../uuid.js';
import {
  type Body,
  checkDeliveryFields,
  checkStoredExpression,
  checkTargetAuth,
  evaluableDocument,
  type Page,
  type SubscriptionChangeInput,
  validateCreate,
  validateTryIt,
  validateUpdate,
} from './input.js';
import { type Auth, COLUMN_FIELDS, COLUMN_INITIAL, type ColumnFieldName } from './fields.js';
import { maskedMember, withStoredSecrets } from './masked-secrets.js';
import { RECORD_VERSION, type SubscriptionRecord, toRecord } from './record.js';
import { openAuth, openSecret, sealSecret } from './secret-box.js';
import { generateSigningSecret, validateGivenSecret } from './signing-secret.js';
import type { ConsentRequest, TargetConsent } from './target-consent.js';

export type { SubscriptionChange };

export interface SubscriptionServiceDependencies {
  database: DatabaseHandle;
  clock: Clock;
  secretKey: Keyring | null;
  dialectMode: DialectMode;
  /** NOTIFICATIONS_USER_SUBSCRIPTIONS: live subscriptions (disabled ones too) one owner may hold. */
  userSubscriptions: number | 'off';
  /** NOTIFICATIONS_TARGET_ALLOW and _DENY, as delivery applies them: a target it would refuse is not stored. */
  targetGuard: AddressGuard;
  /** NOTIFICATIONS_TARGET_VALIDATION=handshake: a new target is stored only with its consent. Absent: not asked. */
  targetConsent?: TargetConsent;
  /** How long a create or PUT waits for the target's host name to resolve; default TARGET_LOOKUP_TIMEOUT_MS. */
  targetLookupTimeoutMs?: number;
  /** Told of every successful write, after it is committed. */
  onChange?: (change: SubscriptionChange) => void;
  /** PostgreSQL: told of each create before it is sent, so that its notification is not read back. */
  expectedNotifications?: ExpectedNotifications;
  /** The operational events telling an owner their subscription was disabled or enabled; none without it. */
  notices?: NoticeEvents;
  /** Operational events were written (committed), due for delivery now. */
  onNotified?: () => void;
}

export interface SigningSecretAnswer {
  secret: string;
}

export interface TryItResult extends Selection {
  matches: boolean;
  dialect: Dialect;
}

export interface SubscriptionService {
  create(owner: string, body: Body): Promise<SubscriptionRecord>;
  get(owner: string, uuid: string): Promise<SubscriptionRecord>;
  list(owner: string, page: Page): Promise<SubscriptionRecord[]>;
  update(owner: string, uuid: string, body: Body): Promise<SubscriptionRecord>;
  remove(owner: string, uuid: string): Promise<SubscriptionRecord>;
  /** The secret deliveries are signed with (`whsec_…`), for the owner only. */
  signingSecret(owner: string, uuid: string): Promise<SigningSecretAnswer>;
  /** Replaces the signing secret with `body.secret`, or a new random one; the old one signs too for a while. */
  rotateSigningSecret(owner: string, uuid: string, body: Body): Promise<SigningSecretAnswer>;
  /** Evaluates an expression (compiled as a new subscription's would be) against an event. */
  tryExpression(body: Body): TryItResult;
  /** Evaluates a subscription's stored expression, in the dialect it was written in. */
  trySubscription(owner: string, uuid: string, event: JsonValue): Promise<TryItResult>;
}

/**
 * A resolver usually answers in milliseconds; one that has not in 2 s is not waited for (glibc
 * alone may take 5 s a try): the name is stored, and delivery judges it when it connects.
 */
export const TARGET_LOOKUP_TIMEOUT_MS = 2_000;

export function subscriptionService(deps: SubscriptionServiceDependencies): SubscriptionService {
  const { db } = deps.database;
  const notify = (change: SubscriptionChange) => deps.onChange?.(change);
  const lookupTimeoutMs = deps.targetLookupTimeoutMs ?? TARGET_LOOKUP_TIMEOUT_MS;
  // Creates of the same moment share one insert statement: bounded to what one statement holds.
  // On PostgreSQL it commits by itself when nothing else commits with it (no BEGIN and COMMIT):
  // with a limit, the owners' locks and the insert are one round trip and one transaction.
  const limit = deps.userSubscriptions;
  const insertRow = batchedOperation(deps.database, 'createSubscriptions', (rows: readonly SubscriptionRow[]) => ({ rows, most: limit }), {
    oneStatement: true,
    maxBatch: SUBSCRIPTION_ROWS_PER_STATEMENT,
  });

  /** 400 when delivery would refuse the target's address (every address of its host name). */
  async function checkTarget(targetUrl: string): Promise<void> {
    // Parsed as delivery parses it (input.ts has made sure it parses): 0x7f.1 is 127.0.0.1.
    const refusal = await deps.targetGuard.hostRefusal(new URL(targetUrl).hostname, lookupTimeoutMs);
    if (refusal !== null) throw serviceError('TARGET_DENIED', refusal);
  }

  /** 400 when delivery would refuse the address of a new oauth2 token endpoint, as for a target. */
  async function checkTokenEndpoint(auth: Auth | undefined, stored: Auth | undefined): Promise<void> {
    if (auth === undefined || !('type' in auth) || auth.type !== 'oauth2') return;
    if (stored !== undefined && 'type' in stored && stored.type === 'oauth2' && stored.oauth2.token_url === auth.oauth2.token_url) return;
    const refusal = await deps.targetGuard.hostRefusal(new URL(auth.oauth2.token_url).hostname, lookupTimeoutMs);
    if (refusal !== null) throw serviceError('FIELD_INVALID', 'body.auth.oauth2.token_url', refusal);
  }

  /**
   * The record a write answers with, made inside its transaction: when the stored credentials
   * do not open with this key (sealed with another, or the key is gone), the 500 this throws
   * rolls the write back, so a PUT or DELETE that cannot answer has changed nothing. A PUT
   * that sends new `auth` replaces them and goes through.
   */
  const answerable = (row: SubscriptionRow) => toRecord(row, deps.secretKey);

  /**
   * The target's consent, asked after the address guard has passed it: the deliveries per minute
   * it allowed (null: no cap; also when targets are not asked). Throws when it refused. A broker
   * is not asked: the handshake is HTTP's, and a broker consents through its own access control
   * (what the credentials in `auth` may write).
   */
  async function allowedRate(consent: ConsentRequest): Promise<number | null> {
    if (deps.targetConsent === undefined || !kindOfTarget(consent.targetUrl).handshake) return null;
    return (await deps.targetConsent.ask(consent)).allowedPerMinute;
  }

  async function findOwned(owner: string, uuid: string): Promise<SubscriptionRow> {
    const key = canonicalUuid(uuid);
    const row = key === undefined ? undefined : await findLiveSubscription(db, owner, key);
    if (!row) throw subscriptionNotFound(uuid);
    return row;
  }

  return {
    async create(owner, body) {
      const input = validateCreate(body, deps.dialectMode);
      // A pull subscription has no target to check or ask.
      const targetUrl = input.delivery === 'push' ? input.target_url! : '';
      if (input.delivery === 'push') await checkTarget(targetUrl);
      await checkTokenEndpoint(input.auth, undefined);
      const allowed =
        input.delivery === 'push'
          ? await allowedRate({ targetUrl, auth: input.auth ?? {}, ratePerSecond: input.rate_limit ?? null })
          : null;
      const now = deps.clock();
      const row: SubscriptionRow = {
        uuid: randomUUID(),
        owner,
        name: input.name,
        jsonpath: input.compiled.source,
        dialect: input.compiled.dialect,
        delivery: input.delivery,
        target_url: targetUrl,
        auth: sealSecret(JSON.stringify(input.auth ?? {}), deps.secretKey),
        extensions: JSON.stringify(input.extensions ?? {}),
        signing_secret: sealSecret(generateSigningSecret(), deps.secretKey),
        previous_signing_secret: null,
        secret_rotated: null,
        version: RECORD_VERSION,
        created: now,
        updated: now,
        deleted: null,
        disabled: input.disable ? now : null,
        error: null,
        ...columnsOf(input),
        allowed_rate: allowed,
        notices: input.notices === true ? 1 : 0,
      };
      const expected = deps.expectedNotifications;
      expected?.expect(row.uuid);
      const admitted = await insertRow(row).catch((error: unknown) => {
        expected?.cancel(row.uuid);
        throw error;
      });
      if (!admitted) expected?.cancel(row.uuid);
      if (!admitted && limit !== 'off') throw serviceError('SUBSCRIPTION_LIMIT', limit);
      notify({ kind: 'upsert', row });
      return toRecord(row, deps.secretKey);
    },

    async get(owner, uuid) {
      return toRecord(await findOwned(owner, uuid), deps.secretKey);
    },

    async list(owner, page) {
      const rows = await listLiveSubscriptions(db, owner, page);
      return rows.map((row) => toRecord(row, deps.secretKey));
    },

    async update(owner, uuid, body) {
      // A subscription keeps the meaning it was written with: an expression sent back as stored (a
      // record PUT back as read) is not compiled again, which under today's
      // NOTIFICATIONS_JSONPATH_DIALECT could pick another dialect (or refuse it); and enabling
      // without a new one checks that the stored one compiles. Both need the stored row first.
      const readFirst = typeof body.jsonpath === 'string' || body.disabled === null;
      const before = readFirst ? await findOwned(owner, uuid) : undefined;
      const input = validateUpdate(
        before !== undefined && body.jsonpath === before.jsonpath ? withoutExpression(body) : body,
        deps.dialectMode,
      );
      const key = canonicalUuid(uuid);
      const now = deps.clock();
      if (before !== undefined && input.disable === false && input.compiled === undefined && before.disabled !== null)
        checkStoredExpression(before.jsonpath, storedDialect(before));
      // Checked when it changes, outside the write's transaction (a lookup or a handshake can take
      // seconds); a record PUT back with the target it has is not refused for a rule made since,
      // nor asked again. The old target's allowed rate goes with it.
      const stored = touchesDelivery(input) ? (before ?? (await findOwned(owner, uuid))) : undefined;
      if (stored !== undefined) {
        checkUpdateOf(stored, input);
        if (input.auth !== undefined) {
          // The record as read shows masks where secrets are: sent back, they keep the stored ones.
          // Opened only then: new credentials replace stored ones this instance cannot open.
          const storedAuth = maskedMember(input.auth) === undefined ? undefined : openAuth(stored.auth, deps.secretKey);
          if (storedAuth !== undefined) input.auth = withStoredSecrets(input.auth, storedAuth);
          await checkTokenEndpoint(input.auth, storedAuth);
        }
        checkUpdatedAuth(stored, input, deps.secretKey);
      }
      // An empty change set still moves `updated`: the client asked for an update.
      const changes = changesFrom(input, now, deps.secretKey);
      if (typeof input.target_url === 'string' && stored !== undefined && input.target_url !== stored.target_url) {
        await checkTarget(input.target_url);
        changes.allowed_rate = await allowedRate({
          targetUrl: input.target_url,
          auth: input.auth ?? openAuth(stored.auth, deps.secretKey),
          ratePerSecond: input.rate_limit === undefined ? stored.rate_limit : input.rate_limit,
        });
      }
      const written =
        key === undefined
          ? undefined
          : await deps.database.write(async (tx) => {
              const { capabilities } = deps.database;
              const held = changes.disabled === undefined ? undefined : await heldDisabledState(tx, capabilities, owner, key);
              const updated = await updateSubscription(tx, capabilities, owner, key, changes, now);
              if (!updated) return undefined;
              // Disabling stops pending deliveries, as deleting does; re-enabling lets new events through.
              if (changes.disabled !== undefined && changes.disabled !== null) await cancelPendingMatches(tx, updated.uuid, now);
              // Either way the subscription starts afresh: its run of failures ends, and its owner is told.
              const turned = held === undefined ? undefined : (held.disabled === null) !== (updated.disabled === null);
              let notified = 0;
              if (turned) {
                await endRuns(tx, [updated.uuid]);
                const kind = updated.disabled === null ? 'enabled' : 'disabled';
                notified = await logNotices(tx, [{ kind, subscription: updated }], deps.notices, now);
              }
              return { row: updated, record: answerable(updated), notified };
            });
      if (!written) throw subscriptionNotFound(uuid);
      notify({ kind: 'upsert', row: written.row });
      if (written.notified > 0) deps.onNotified?.();
      return written.record;
    },

    async remove(owner, uuid) {
      const key = canonicalUuid(uuid);
      const now = deps.clock();
      const written =
        key === undefined
          ? undefined
          : await deps.database.write(async (tx) => {
              const deleted = await deleteSubscription(tx, deps.database.capabilities, owner, key, now);
              if (!deleted) return undefined;
              await cancelPendingMatches(tx, deleted.uuid, deleted.updated);
              await endRuns(tx, [deleted.uuid]);
              return { row: deleted, record: answerable(deleted) };
            });
      if (!written) throw subscriptionNotFound(uuid);
      notify({ kind: 'delete', uuid: written.row.uuid });
      return written.record;
    },

    async signingSecret(owner, uuid) {
      return { secret: openSecret((await findOwned(owner, uuid)).signing_secret, deps.secretKey) };
    },

    async rotateSigningSecret(owner, uuid, body) {
      const secret = givenSecret(body) ?? generateSigningSecret();
      const key = canonicalUuid(uuid);
      const now = deps.clock();
      const sealed = sealSecret(secret, deps.secretKey);
      const row =
        key === undefined
          ? undefined
          : await deps.database.write((tx) => rotateSigningSecret(tx, deps.database.capabilities, owner, key, sealed, now));
      if (!row) throw subscriptionNotFound(uuid);
      notify({ kind: 'upsert', row });
      return { secret };
    },

    tryExpression(body) {
      const { compiled, event } = validateTryIt(body, deps.dialectMode);
      return { matches: compiled.matches(event), dialect: compiled.dialect, ...compiled.select(event) };
    },

    async trySubscription(owner, uuid, body) {
      const event = evaluableDocument(body, 'body');
      const row = await findOwned(owner, uuid);
      // The stored dialect, not today's NOTIFICATIONS_JSONPATH_DIALECT: a subscription keeps the
      // meaning it was written with.
      const compiled = compileJsonPath(row.jsonpath, storedDialect(row));
      return { matches: compiled.matches(event), dialect: compiled.dialect, ...compiled.select(event) };
    },
  };
}

/** Whether an update sends what the kind of delivery decides: then it is checked against the stored kind. */
function touchesDelivery(input: SubscriptionChangeInput): boolean {
  return input.delivery !== undefined || input.target_url !== undefined || input.auth !== undefined || input.rate_limit !== undefined;
}

/** `delivery` is fixed once created (a pull reader's cursors and a push target's history do not carry over). */
function checkUpdateOf(stored: SubscriptionRow, input: SubscriptionChangeInput): void {
  if (input.delivery !== undefined && input.delivery !== stored.delivery)
    throw serviceError('FIELD_INVALID', 'body.delivery', `cannot change (it is "${stored.delivery}"); create a new subscription instead`);
  checkDeliveryFields(stored.delivery, input, false);
}

/** A PUT of a target or of credentials: what they come to together must fit (checkTargetAuth). */
function checkUpdatedAuth(stored: SubscriptionRow, input: SubscriptionChangeInput, secretKey: Keyring | null): void {
  if (stored.delivery !== 'push' || (typeof input.target_url !== 'string' && input.auth === undefined)) return;
  const targetUrl = typeof input.target_url === 'string' ? input.target_url : stored.target_url;
  if (refusedAuthTypes(targetUrl).length === 0) return;
  checkTargetAuth(targetUrl, input.auth ?? openAuth(stored.auth, secretKey));
}

function changesFrom(input: SubscriptionChangeInput, now: number, secretKey: Keyring | null): SubscriptionChanges {
  const changes: SubscriptionChanges = {};
  if (input.name !== undefined) changes.name = input.name;
  if (input.compiled !== undefined) {
    changes.jsonpath = input.compiled.source;
    changes.dialect = input.compiled.dialect;
  }
  // null only reaches here for a pull subscription (checkUpdateOf), whose stored target_url stays ''.
  if (typeof input.target_url === 'string') changes.target_url = input.target_url;
  if (input.auth !== undefined) changes.auth = sealSecret(JSON.stringify(input.auth), secretKey);
  if (input.extensions !== undefined) changes.extensions = JSON.stringify(input.extensions);
  for (const name of COLUMN_FIELDS) if (input[name] !== undefined) Object.assign(changes, { [name]: input[name] });
  if (input.notices !== undefined) changes.notices = input.notices ? 1 : 0;
  if (input.disable === true) changes.disabled = now;
  if (input.disable === false) {
    changes.disabled = null;
    changes.error = null;
  }
  return changes;
}

/** A new row's column fields (fields.ts, column()): as sent, or their initial values. */
function columnsOf(input: SubscriptionChangeInput): Pick<SubscriptionRow, ColumnFieldName> {
  const columns: Pick<SubscriptionRow, ColumnFieldName> = { ...COLUMN_INITIAL };
  for (const name of COLUMN_FIELDS) if (input[name] !== undefined) Object.assign(columns, { [name]: input[name] });
  return columns;
}

/** `body` without its `jsonpath`: the stored expression and its dialect stay as they are. */
function withoutExpression(body: Body): Body {
  const { jsonpath: _, ...rest } = body;
  return rest;
}

/** The `secret` of a rotation's body, if one was sent; 400 for anything else in it. */
function givenSecret(body: Body): string | undefined {
  for (const field of Object.keys(body)) if (field !== 'secret') throw serviceError('FIELD_UNKNOWN', 'body', field);
  return body.secret === undefined ? undefined : validateGivenSecret(body.secret, 'body.secret');
}

function storedDialect(row: SubscriptionRow): Dialect {
  if (row.dialect === 'rfc9535' || row.dialect === 'jsonpath2') return row.dialect;
  // A 500 whose detail goes to the log, not to the client.
  throw new Error(`subscription ${row.uuid} has an unknown stored dialect "${row.dialect}"`);
}
