/**
 * One run of the import: the original's subscriptions, then (schema 3.0, unless told not to)
 * its event log, into this service's database. Each page is written in one transaction, and a
 * row whose key is there already is compared, not written: a run killed halfway and run again
 * completes with nothing twice, and a second run finds everything present. Reads stream; the
 * next page of the log is read while the last is written.
 */
import type { Keyring } from '../config/keyring.js';
import type { DatabaseHandle } from '../db/connect.js';
import { importedLogPage, insertNewSubscriptions, makeRoomForImport } from '../db/stores/imported-rows.js';
import { chunks } from '../db/chunks.js';
import { liveCounts, subscriptionsByUuid } from '../db/stores/subscriptions.js';
import type { EventsTable, MatchesTable } from '../db/tables.js';
import type { ZonedTimes } from '../time/zoned-time.js';
import { compareMatch, importedEvent, importedMatch } from './imported-log.js';
import { compareSubscription, type ImportedSubscription, importedSubscription } from './imported-subscription.js';
import type { OriginalDatabase, OriginalEvent, OriginalMatch, SchemaVersion } from './original-database.js';
import { uuidOf } from './original-values.js';
import type { SourceValue } from './sql-driver.js';
import { emptyTally, type Listed, type Tally } from './tally.js';

const SUBSCRIPTION_PAGE = 500;
/**
 * Events a page at most, and the bytes of their texts a page should come near: a page is read
 * while the one before it is written, so about three are in memory at once. Measured on a log of
 * 2 KB events (docs/benchmarks.md, import): 1,000 a page kept the command under 300 MB resident
 * (5,000: 510 MB) at about the same rate; a log of larger events gets fewer a page.
 */
const EVENT_PAGE = 1_000;
const PAGE_BYTES = 2 * 1024 * 1024;

export interface ImportOptions {
  original: OriginalDatabase;
  database: DatabaseHandle;
  times: ZonedTimes;
  keyring: Keyring | null;
  /** What the address guard says of a target's host (null: permitted). */
  hostRefusal(host: string): Promise<string | null>;
  /** µs since the epoch. */
  clock: () => number;
  subscriptionsOnly: boolean;
  /** Only events created at or after this (the original's local time, as it stored it). */
  since: string | undefined;
  userSubscriptions: number | 'off';
  retentionMs: number | 'off';
  /** Aborted: the run stops after the page being written. */
  signal: AbortSignal;
  /** Log rows done so far, of how many. */
  progress(done: number, total: number): void;
}

export interface SubscriptionReport extends Tally {
  deleted: number;
  disabled: number;
  /** Live subscriptions this import disabled, and why. */
  disabledByImport: Array<{ uuid: string; user: string; name: string; reasons: string[] }>;
  credentialsMoved: Array<{ uuid: string; user: string }>;
  /** Users holding more live subscriptions than NOTIFICATIONS_USER_SUBSCRIPTIONS after the import. */
  usersOverLimit: Array<{ user: string; live: number }>;
}

export interface LogReport {
  events: Tally;
  matches: Tally;
  /** Events kept under `id#uuid`: an earlier one has their source and id. */
  repeatedIds: number;
  /** New events received longer ago than NOTIFICATIONS_RETENTION: the server's retention removes them. */
  olderThanRetention: number;
}

export interface ImportReport {
  version: SchemaVersion;
  subscriptions: SubscriptionReport;
  /** none: schema 2.0 has no log; skipped: --subscriptions-only. */
  log: LogReport | 'none' | 'skipped';
  interrupted: boolean;
  /** Log rows (events and matches) read. */
  logRows: number;
}

export async function runImport(options: ImportOptions): Promise<ImportReport> {
  const { original, signal } = options;
  await makeRoomForImport(options.database);
  const owners = new Map<string, string>();
  const subscriptions = await importSubscriptions(options, owners);
  const report: ImportReport = { version: original.version, subscriptions, log: 'skipped', interrupted: signal.aborted, logRows: 0 };
  if (original.version === '2.0') report.log = 'none';
  else if (!options.subscriptionsOnly && !signal.aborted) {
    const log = await importLog(options, owners, (rows) => (report.logRows = rows));
    report.log = log;
    report.interrupted = signal.aborted;
  }
  return report;
}

async function importSubscriptions(options: ImportOptions, owners: Map<string, string>): Promise<SubscriptionReport> {
  const { database, keyring } = options;
  const report: SubscriptionReport = {
    ...emptyTally(),
    deleted: 0,
    disabled: 0,
    disabledByImport: [],
    credentialsMoved: [],
    usersOverLimit: [],
  };
  const context = { times: options.times, keyring, now: options.clock(), hostRefusal: options.hostRefusal };
  for await (const page of options.original.subscriptions(SUBSCRIPTION_PAGE)) {
    const readable: ImportedSubscription[] = [];
    for (const [i, outcome] of (await Promise.all(page.map((row) => importedSubscription(row, context)))).entries()) {
      report.read++;
      if ('unreadable' in outcome) list(report.unreadable, named(page[i]!.uuid), outcome.unreadable);
      else readable.push(outcome);
    }
    const outcomes = await database.write(async (tx) => {
      const inserted = await insertNewSubscriptions(
        tx,
        database.capabilities,
        readable.map((s) => s.row),
      );
      const here = await subscriptionsByUuid(
        tx,
        readable.filter((s) => !inserted.has(s.row.uuid)).map((s) => s.row.uuid),
      );
      return readable.map((s) => (inserted.has(s.row.uuid) ? 'new' : compareSubscription(here.get(s.row.uuid)!, s, keyring)));
    });
    for (const [i, outcome] of outcomes.entries()) {
      const { row, disabledBecause, credentialsMoved } = readable[i]!;
      if (typeof outcome === 'object') {
        list(report.conflicts, row.uuid, `subscription of ${row.owner}: ${outcome.conflict}; left as it is here`);
        continue;
      }
      owners.set(row.uuid, row.owner);
      count(report, outcome);
      if (outcome !== 'new') continue;
      if (row.deleted !== null) report.deleted++;
      else if (row.disabled !== null) report.disabled++;
      if (disabledBecause.length > 0)
        report.disabledByImport.push({ uuid: row.uuid, user: row.owner, name: row.name, reasons: disabledBecause });
      if (credentialsMoved) report.credentialsMoved.push({ uuid: row.uuid, user: row.owner });
    }
    if (options.signal.aborted) break;
  }
  if (options.userSubscriptions !== 'off') {
    const most = options.userSubscriptions;
    for (const users of chunks([...new Set(owners.values())], 1_000)) {
      for (const [user, live] of await liveCounts(database.db, users)) if (live > most) report.usersOverLimit.push({ user, live });
    }
  }
  return report;
}

/** A page of the original's log, read and turned into rows of this service's. */
interface LogPage {
  events: EventsTable[];
  matches: MatchesTable[];
  /** The original's rows of the page, all of them. */
  read: { events: number; matches: number };
  unreadable: { events: Listed['first']; matches: Listed['first'] };
}

async function importLog(
  options: ImportOptions,
  owners: ReadonlyMap<string, string>,
  rowsRead: (rows: number) => void,
): Promise<LogReport> {
  const { original, signal } = options;
  const report: LogReport = { events: emptyTally(), matches: emptyTally(), repeatedIds: 0, olderThanRetention: 0 };
  const total = await original.countLog(options.since);
  const retainedFrom = options.retentionMs === 'off' ? undefined : options.clock() - options.retentionMs * 1000;
  let pageSize = EVENT_PAGE;
  const pages = original.events(options.since, () => pageSize)[Symbol.asyncIterator]();
  const readPage = async (): Promise<LogPage | undefined> => {
    const next = await pages.next();
    if (next.done === true) return undefined;
    const bytes = next.value.reduce((sum, event) => sum + (event.jsondata?.length ?? 0), 0);
    pageSize = Math.max(1, Math.min(EVENT_PAGE, Math.floor(PAGE_BYTES / Math.max(1, bytes / next.value.length))));
    return logPage(next.value, await original.matchesOf(next.value), options.times, owners);
  };
  let done = 0;
  options.progress(done, total.events + total.matches);
  let reading = readPage();
  try {
    for (;;) {
      const page = await reading;
      if (page === undefined) break;
      // The next page is read and converted while this one is written: the writing thread (SQLite's) or
      // the database (PostgreSQL) and this one work at once.
      reading = signal.aborted ? Promise.resolve(undefined) : readPage();
      await writeLogPage(options, page, report, retainedFrom);
      done += page.read.events + page.read.matches;
      rowsRead(done);
      options.progress(done, Math.max(done, total.events + total.matches));
      if (signal.aborted) break;
    }
  } finally {
    await reading.catch(() => undefined);
    await pages.return?.();
  }
  return report;
}

function logPage(
  originalEvents: readonly OriginalEvent[],
  originalMatches: readonly OriginalMatch[],
  times: ZonedTimes,
  owners: ReadonlyMap<string, string>,
): LogPage {
  const page: LogPage = {
    events: [],
    matches: [],
    read: { events: originalEvents.length, matches: originalMatches.length },
    unreadable: { events: [], matches: [] },
  };
  const unreadableEvents = new Set<SourceValue>();
  for (const original of originalEvents) {
    const outcome = importedEvent(original, times);
    if ('unreadable' in outcome) {
      unreadableEvents.add(original.uuid);
      page.unreadable.events.push({ uuid: named(original.uuid), reason: outcome.unreadable });
    } else page.events.push(outcome);
  }
  for (const original of originalMatches) {
    const outcome = unreadableEvents.has(original.event)
      ? { unreadable: 'its event could not be read' }
      : importedMatch(original, times, owners);
    if ('unreadable' in outcome) page.unreadable.matches.push({ uuid: named(original.uuid), reason: outcome.unreadable });
    else page.matches.push(outcome);
  }
  return page;
}

async function writeLogPage(options: ImportOptions, page: LogPage, report: LogReport, retainedFrom: number | undefined): Promise<void> {
  const { events, matches } = page;
  const written = await options.database.perform('importLogPage', importedLogPage(events, matches));
  report.events.read += page.read.events;
  report.matches.read += page.read.matches;
  for (const item of page.unreadable.events) list(report.events.unreadable, item.uuid, item.reason);
  for (const item of page.unreadable.matches) list(report.matches.unreadable, item.uuid, item.reason);
  const received = new Map(events.map((event) => [event.uuid, event.received]));
  report.events.new += written.newEvents.length;
  if (retainedFrom !== undefined)
    report.olderThanRetention += written.newEvents.filter((uuid) => received.get(uuid)! < retainedFrom).length;
  report.repeatedIds += written.repeatedEvents.length;
  report.events.present += written.presentEvents.length;
  for (const { uuid, differs } of written.otherEvents)
    list(report.events.conflicts, uuid, `event: differs in ${differs}; left as it is here`);
  report.matches.new += written.newMatches.length;
  const imported = new Map(matches.map((match) => [match.uuid, match]));
  for (const here of written.presentMatches) {
    const outcome = compareMatch(here, imported.get(here.uuid)!);
    if (typeof outcome === 'object') list(report.matches.conflicts, here.uuid, `match: ${outcome.conflict}; left as it is here`);
    else count(report.matches, outcome);
  }
  const other = new Set(written.otherEvents.map((event) => event.uuid));
  for (const match of matches)
    if (other.has(match.event_uuid))
      list(report.matches.conflicts, match.uuid, "match: its event is not the original's here; not imported");
}

function count(tally: Tally, outcome: 'new' | 'present' | 'changed'): void {
  if (outcome === 'new') tally.new++;
  else tally.present++;
  if (outcome === 'changed') tally.changedHere++;
}

/** A row of the original's by its uuid, in canonical form where it is one. */
function named(uuid: SourceValue): string {
  return uuidOf(uuid) ?? JSON.stringify(uuid);
}

function list(items: Listed, uuid: string, reason: string): void {
  items.count++;
  if (items.first.length < LISTED) items.first.push({ uuid, reason });
}

/** Conflicts and unreadable rows listed by uuid, per kind; beyond it they are counted. */
const LISTED = 100;
