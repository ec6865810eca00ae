/**
 * An original subscription as a row of this service, and whether a row already here is the
 * same one. Everything the original's record held comes over as it was; the expression is read
 * in the original's dialect (jsonpath2), whatever NOTIFICATIONS_JSONPATH_DIALECT says, since the
 * same text can mean something else in RFC 9535. A live subscription this service could not
 * deliver as it stands (an expression that does not compile, a target it refuses, credentials
 * it cannot read) comes over disabled, its `error` saying why.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Keyring } from '../config/keyring.js';
import type { SubscriptionRow } from '../db/tables.js';
import { ServiceError } from '../errors.js';
import { compileJsonPath, JsonPathSyntaxError } from '../jsonpath/index.js';
import { checkedField } from '../subscriptions/field-check.js';
import { COLUMN_INITIAL } from '../subscriptions/fields.js';
import { validateAuth, validateExtensions, validateTargetUrl } from '../subscriptions/input.js';
import { RECORD_VERSION } from '../subscriptions/record.js';
import { openAuth, sealSecret } from '../subscriptions/secret-box.js';
import { generateSigningSecret } from '../subscriptions/signing-secret.js';
import type { ZonedTimes } from '../time/zoned-time.js';
import type { OriginalSubscription } from './original-database.js';
import { uuidOf } from './original-values.js';

export interface SubscriptionImportContext {
  /** The original's times, read in its zone. */
  times: ZonedTimes;
  keyring: Keyring | null;
  /** When this import runs (µs): the time of a disable it makes. */
  now: number;
  /** What the address guard says of a target's host (null: permitted), as at create. */
  hostRefusal(host: string): Promise<string | null>;
}

export interface ImportedSubscription {
  row: SubscriptionRow;
  /** Why it came over disabled; empty when it came over as it was. */
  disabledBecause: string[];
  /** Its target URL held credentials, now in `auth`. */
  credentialsMoved: boolean;
  /** When the original last wrote it (µs): a row here updated later was changed here. */
  originalUpdated: number;
}

/** The row, or why the original's row cannot be read. */
export async function importedSubscription(
  original: OriginalSubscription,
  context: SubscriptionImportContext,
): Promise<ImportedSubscription | { unreadable: string }> {
  const uuid = uuidOf(original.uuid);
  if (uuid === undefined) return { unreadable: `uuid ${JSON.stringify(original.uuid)} is not a uuid` };
  const times: Partial<Record<'created' | 'updated' | 'deleted' | 'disabled', number | null>> = {};
  for (const field of ['created', 'updated', 'deleted', 'disabled'] as const) {
    const text = original[field];
    if (text === null) {
      if (field === 'created' || field === 'updated') return { unreadable: `${field} is empty` };
      times[field] = null;
      continue;
    }
    const micros = context.times.micros(text);
    if (micros === undefined) return { unreadable: `${field} ${JSON.stringify(text)} is not a date and time` };
    times[field] = micros;
  }
  const live = times.deleted === null;
  const disabledBecause: string[] = [];
  const credentials = movedCredentials(original.target_url);
  let auth = jsonObject(original.auth, 'auth', disabledBecause) ?? {};
  const credentialsMoved = credentials !== undefined && Object.keys(auth).length === 0;
  if (credentialsMoved) auth = { type: 'basic', basic: credentials.basic };
  const targetUrl = credentialsMoved ? credentials.targetUrl : original.target_url;
  // Read as a request's would be: its schema first (fields.ts), then what input.ts checks beyond it.
  const checkedAuth = checked(() => validateAuth(checkedField('auth', auth)!), disabledBecause) ?? {};
  const sentExtensions = jsonObject(original.extensions, 'extensions', disabledBecause) ?? {};
  const extensions = checked(() => validateExtensions(checkedField('extensions', sentExtensions)!), disabledBecause) ?? {};
  if (live) {
    // A deleted subscription never delivers or matches again: its target and expression are kept unjudged.
    const url = checked(() => validateTargetUrl(checkedField('target_url', targetUrl) ?? ''), disabledBecause);
    if (url !== undefined) {
      const refusal = await context.hostRefusal(new URL(url).hostname);
      if (refusal !== null) disabledBecause.push(`target_url: ${refusal}`);
    }
    const problem = compileProblem(original.jsonpath);
    if (problem !== undefined) disabledBecause.push(`jsonpath: ${problem}`);
  }
  const version = original.version ?? RECORD_VERSION;
  const row: SubscriptionRow = {
    uuid,
    owner: original.user,
    name: original.name,
    jsonpath: original.jsonpath,
    dialect: 'jsonpath2',
    delivery: 'push',
    target_url: targetUrl,
    auth: sealSecret(JSON.stringify(checkedAuth), context.keyring),
    extensions: JSON.stringify(extensions),
    signing_secret: sealSecret(generateSigningSecret(), context.keyring),
    previous_signing_secret: null,
    secret_rotated: null,
    // The column holds 16 characters; the original's default is the only value it ever wrote.
    version: version.length <= 16 ? version : RECORD_VERSION,
    created: times.created!,
    updated: times.updated!,
    deleted: times.deleted!,
    disabled: times.disabled!,
    error: original.error,
    // The original had none of the fields stored as sent (a rate limit…): each comes over as a create without it.
    ...COLUMN_INITIAL,
    allowed_rate: null,
    // The original had no notices of its own: a pipeline it served gets its data events only.
    notices: 0,
  };
  if (live && disabledBecause.length > 0) {
    row.disabled ??= context.now;
    row.updated = Math.max(row.updated, context.now);
    const why = `came over from the original service disabled: ${disabledBecause.join('; ')}`;
    row.error = original.error === null ? why : `${why} (the original's error: ${original.error})`;
  }
  return { row, disabledBecause: live ? disabledBecause : [], credentialsMoved, originalUpdated: times.updated! };
}

/**
 * How a row already here with the imported row's uuid stands: the same subscription as the
 * original's (`present`), the same one changed here since it was imported (`changed`: through
 * the API, or disabled by an earlier import), or another one (a conflict, saying what differs).
 */
export function compareSubscription(
  here: SubscriptionRow,
  imported: ImportedSubscription,
  keyring: Keyring | null,
): 'present' | 'changed' | { conflict: string } {
  const { row } = imported;
  if (here.owner !== row.owner) return { conflict: `belongs to ${here.owner} here, to ${row.owner} in the original` };
  if (here.created !== row.created) return { conflict: 'was created at another time here than in the original' };
  const differ: string[] = [];
  for (const field of ['name', 'jsonpath', 'target_url', 'version', 'deleted'] as const) if (here[field] !== row[field]) differ.push(field);
  if (!isDeepStrictEqual(JSON.parse(here.extensions), JSON.parse(row.extensions))) differ.push('extensions');
  if (!sameAuth(here.auth, row.auth, keyring)) differ.push('auth');
  // A disable this import makes is dated now, so it is the same as an earlier import's only in what it holds.
  if (imported.disabledBecause.length > 0) return differ.length === 0 ? 'present' : 'changed';
  if (here.updated > imported.originalUpdated) return 'changed';
  if (here.disabled !== row.disabled || here.error !== row.error) differ.push('disabled');
  if (here.updated !== row.updated) differ.push('updated');
  if (differ.length === 0) return 'present';
  return {
    conflict: `differs in ${differ.join(', ')}${here.updated < row.updated ? ' (the original changed it after it was imported)' : ''}`,
  };
}

function sameAuth(here: string, imported: string, keyring: Keyring | null): boolean {
  try {
    return isDeepStrictEqual(openAuth(here, keyring), openAuth(imported, keyring));
  } catch {
    return false;
  }
}

/** The original's `auth` or `extensions` JSON text as an object; NULL is {}; otherwise why not (noted). */
function jsonObject(text: string | null, field: string, problems: string[]): Record<string, unknown> | undefined {
  if (text === null || text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Said below.
  }
  problems.push(`${field}: not a JSON object, so it was left empty`);
  return undefined;
}

/** `check()`'s value; undefined, with the reason noted, when it refuses what this service would refuse at create. */
function checked<T>(check: () => T, problems: string[]): T | undefined {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    problems.push(error.message.replace(/^body\./, ''));
    return undefined;
  }
}

function compileProblem(jsonpath: string): string | undefined {
  try {
    compileJsonPath(jsonpath, 'jsonpath2');
    return undefined;
  } catch (error) {
    if (error instanceof JsonPathSyntaxError) return `does not compile in the original's dialect (jsonpath2): ${error.message}`;
    throw error;
  }
}

/**
 * A target URL with a user name and password in it (the original sent them as HTTP Basic
 * credentials): the URL without them, and them as `auth`. Undefined when it holds none.
 */
function movedCredentials(targetUrl: string): { targetUrl: string; basic: { username: string; password: string } } | undefined {
  const m = /^(https?:\/\/)([^/?#@]*)@/i.exec(targetUrl);
  if (!m) return undefined;
  const userinfo = m[2]!;
  const colon = userinfo.indexOf(':');
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  return {
    targetUrl: m[1]! + targetUrl.slice(m[0].length),
    basic: {
      username: decode(colon < 0 ? userinfo : userinfo.slice(0, colon)),
      password: decode(colon < 0 ? '' : userinfo.slice(colon + 1)),
    },
  };
}
