/**
 * The original service's tables, as its `dbsync` leaves them (pacifica-notifications, through
 * peewee): its schema version, its subscriptions (`eventmatch`) and, from version 3.0, its
 * event log (`eventlog`, and `eventlogmatch` for the matches). Values come as the original
 * stored them: uuids with or without dashes (peewee writes them as 32 hex digits outside
 * PostgreSQL), times as naive local text, result codes as text.
 */
import { openDriver, type SourceRow, type SourceValue, type SqlDriver } from './sql-driver.js';
import type { SourceLocation } from './source-url.js';

/** What `notificationsystem` says; only these versions are read. */
export type SchemaVersion = '2.0' | '3.0';

/** The source is not a database of the original's, or of a version not read: exit 2, saying what was found. */
export class NotTheOriginal extends Error {
  override readonly name = 'NotTheOriginal';
}

export interface OriginalSubscription {
  uuid: SourceValue;
  name: string;
  jsonpath: string;
  user: string;
  target_url: string;
  /** JSON text; null when the column is NULL or absent. */
  auth: string | null;
  extensions: string | null;
  version: string | null;
  created: string;
  updated: string;
  deleted: string | null;
  disabled: string | null;
  error: string | null;
}

export interface OriginalEvent {
  /** The uuid as stored: how its matches refer to it. */
  uuid: SourceValue;
  jsondata: string | null;
  created: string;
}

export interface OriginalMatch {
  uuid: SourceValue;
  event: SourceValue;
  subscription: SourceValue;
  policy: string | null;
  target: string | null;
  created: string;
}

export interface LogCounts {
  events: number;
  matches: number;
}

export interface OriginalDatabase {
  readonly version: SchemaVersion;
  /** Every subscription, in pages, deleted ones too. */
  subscriptions(pageSize: number): AsyncIterable<OriginalSubscription[]>;
  countSubscriptions(): Promise<number>;
  /** Version 3.0: events created at or after `since` (the original's local time text), and their matches. */
  countLog(since: string | undefined): Promise<LogCounts>;
  /** Version 3.0: the events, oldest first, `pageSize()` at a time (asked before each page). */
  events(since: string | undefined, pageSize: () => number): AsyncIterable<OriginalEvent[]>;
  /** The matches of these events. */
  matchesOf(events: readonly OriginalEvent[]): Promise<OriginalMatch[]>;
  close(): Promise<void>;
}

const SUBSCRIPTION_COLUMNS = ['uuid', 'name', 'jsonpath', 'user', 'target_url', 'created', 'updated', 'deleted', 'disabled', 'error'];
/** Added by later versions of the original; read as their defaults where absent. */
const LATER_SUBSCRIPTION_COLUMNS = ['auth', 'extensions', 'version'];
const EVENT_COLUMNS = ['uuid', 'jsondata', 'created'];
const MATCH_COLUMNS = ['uuid', 'event_log_id', 'event_match_id', 'policy_status_code', 'target_status_code', 'created'];

/** Opens the source and checks it is the original's, of a version read; throws NotTheOriginal or SourceUnreachable. */
export async function openOriginal(location: SourceLocation): Promise<OriginalDatabase> {
  const driver = await openDriver(location);
  try {
    return await readerOf(driver);
  } catch (error) {
    await driver.close().catch(() => undefined);
    throw error;
  }
}

async function readerOf(driver: SqlDriver): Promise<OriginalDatabase> {
  const tables = new Set((await driver.tables()).map((name) => name.toLowerCase()));
  const version = await schemaVersion(driver, tables);
  const subscriptionColumns = await requireColumns(driver, 'eventmatch', SUBSCRIPTION_COLUMNS);
  if (version === '3.0') {
    await requireColumns(driver, 'eventlog', EVENT_COLUMNS);
    await requireColumns(driver, 'eventlogmatch', MATCH_COLUMNS);
  }
  const q = (name: string) => driver.quote(name);
  const later = LATER_SUBSCRIPTION_COLUMNS.map((name) => (subscriptionColumns.has(name) ? q(name) : `null as ${q(name)}`));
  const subscriptionSql = `select ${[...SUBSCRIPTION_COLUMNS.map(q), ...later].join(', ')} from ${q('eventmatch')} order by ${q('uuid')}`;
  const since = (value: string | undefined, column: string) => (value === undefined ? '' : ` where ${column} >= ${driver.param(1)}`);
  const sinceParams = (value: string | undefined) => (value === undefined ? [] : [value]);

  return {
    version,
    async *subscriptions(pageSize) {
      for await (const page of driver.pages(subscriptionSql, [], () => pageSize)) yield page.map(subscriptionOf);
    },
    async countSubscriptions() {
      return count(await driver.query(`select count(*) as n from ${q('eventmatch')}`));
    },
    async countLog(from) {
      const events = count(await driver.query(`select count(*) as n from ${q('eventlog')}${since(from, q('created'))}`, sinceParams(from)));
      const matches = count(
        await driver.query(
          `select count(*) as n from ${q('eventlogmatch')} m join ${q('eventlog')} e on e.${q('uuid')} = m.${q('event_log_id')}${since(
            from,
            `e.${q('created')}`,
          )}`,
          sinceParams(from),
        ),
      );
      return { events, matches };
    },
    async *events(from, pageSize) {
      const sql = `select ${EVENT_COLUMNS.map(q).join(', ')} from ${q('eventlog')}${since(from, q('created'))} order by ${q('created')}, ${q('uuid')}`;
      for await (const page of driver.pages(sql, sinceParams(from), pageSize)) {
        yield page.map((row) => ({ uuid: row.uuid ?? null, jsondata: textOrNull(row.jsondata), created: text(row.created) }));
      }
    },
    async matchesOf(events) {
      if (events.length === 0) return [];
      const keys = events.map((event) => event.uuid);
      const rows = await driver.query(
        `select ${MATCH_COLUMNS.map(q).join(', ')} from ${q('eventlogmatch')} where ${q('event_log_id')} in (${keys
          .map((_, i) => driver.param(i + 1))
          .join(', ')}) order by ${q('created')}, ${q('uuid')}`,
        keys,
      );
      return rows.map((row) => ({
        uuid: row.uuid ?? null,
        event: row.event_log_id ?? null,
        subscription: row.event_match_id ?? null,
        policy: textOrNull(row.policy_status_code),
        target: textOrNull(row.target_status_code),
        created: text(row.created),
      }));
    },
    close: () => driver.close(),
  };
}

async function schemaVersion(driver: SqlDriver, tables: ReadonlySet<string>): Promise<SchemaVersion> {
  if (!tables.has('notificationsystem')) {
    const found = [...tables].sort();
    throw new NotTheOriginal(
      tables.has('eventmatch')
        ? 'the source has an eventmatch table but no notificationsystem table, so its schema version is unknown: run the original\'s "dbsync" on it first'
        : `the source holds none of the original's tables (notificationsystem, eventmatch); found ${
            found.length === 0 ? 'no tables' : `${found.length} other table${found.length === 1 ? '' : 's'}: ${listed(found)}`
          }`,
    );
  }
  const rows = await driver.query(`select ${driver.quote('part')}, ${driver.quote('value')} from ${driver.quote('notificationsystem')}`);
  const parts = new Map(rows.map((row) => [String(row.part), row.value === null ? null : Number(row.value)]));
  const found = `${parts.get('major') ?? '?'}.${parts.get('minor') ?? '?'}`;
  if (found === '3.0' || found === '2.0') {
    if (!tables.has('eventmatch')) throw new NotTheOriginal(`the source says schema ${found} but has no eventmatch table`);
    if (found === '3.0' && !(tables.has('eventlog') && tables.has('eventlogmatch')))
      throw new NotTheOriginal('the source says schema 3.0 but lacks its event log tables (eventlog, eventlogmatch)');
    return found;
  }
  throw new NotTheOriginal(`the source's schema version is ${found} (notificationsystem); this import reads versions 3.0 and 2.0`);
}

async function requireColumns(driver: SqlDriver, table: string, required: readonly string[]): Promise<Set<string>> {
  const columns = new Set((await driver.columns(table)).map((name) => name.toLowerCase()));
  const missing = required.filter((name) => !columns.has(name));
  if (missing.length > 0)
    throw new NotTheOriginal(
      `the source's ${table} table lacks the original's column${missing.length === 1 ? '' : 's'} ${missing.join(', ')}`,
    );
  return columns;
}

function subscriptionOf(row: SourceRow): OriginalSubscription {
  return {
    uuid: row.uuid ?? null,
    name: text(row.name),
    jsonpath: text(row.jsonpath),
    user: text(row.user),
    target_url: text(row.target_url),
    auth: textOrNull(row.auth),
    extensions: textOrNull(row.extensions),
    version: textOrNull(row.version),
    created: text(row.created),
    updated: text(row.updated),
    deleted: textOrNull(row.deleted),
    disabled: textOrNull(row.disabled),
    error: textOrNull(row.error),
  };
}

function text(value: SourceValue | undefined): string {
  return value === null || value === undefined ? '' : String(value);
}

function textOrNull(value: SourceValue | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

function count(rows: readonly SourceRow[]): number {
  return Number(rows[0]?.n ?? 0);
}

function listed(names: readonly string[]): string {
  return names.length <= 8 ? names.join(', ') : `${names.slice(0, 8).join(', ')}, …`;
}
