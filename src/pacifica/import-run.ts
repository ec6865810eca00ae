/**
 * One run of the import: the original's subscriptions, then (schema 3.0, unless told not to)
 * its event log, into this service's database. Each page is written in one transaction, and a
 * row whose key is there already is compared, not written: a run killed halfway and run again
 * completes with nothing twice, and a second run finds everything present. Reads stream; the
 * next page of the log is read while the last is written.
 */
import type { Keyring } from '../config/keyring.js';
import type { DatabaseHandle } from '../db/connect.js';
import { eventsByUuid } from '../db/events.js';
import { insertNewEvents, insertNewMatches, insertNewSubscriptions, matchesByUuid } from '../db/imported-rows.js';
import { chunks } from '../db/chunks.js';
import { liveCounts, subscriptionsByUuid } from '../db/subscriptions.js';
import type { EventsTable, MatchesTable } from '../db/tables.js';
import type { ZonedTimes } from '../time/zoned-time.js';
import { compareEvent, compareMatch, importedEvent, importedMatch, repeatedEventId } from './imported-log.js';
import { compareSubscription, type ImportedSubscription, importedSubscription } from './imported-subscription.js';
import type { OriginalDatabase, OriginalEvent, OriginalMatch, SchemaVersion } from './original-database.js';
import { uuidOf } from './original-values.js';
import type { SourceValue } from './sql-driver.js';
import { emptyTally, type Listed, type Tally } from './tally.js';

const SUBSCRIPTION_PAGE = 500;
const EVENT_PAGE = 1_000;

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

interface ReadPage {
  events: OriginalEvent[];
  matches: OriginalMatch[];
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
  const pages = original.events(options.since, EVENT_PAGE)[Symbol.asyncIterator]();
  const readPage = async (): Promise<ReadPage | undefined> => {
    const next = await pages.next();
    if (next.done === true) return undefined;
    return { events: next.value, matches: await original.matchesOf(next.value) };
  };
  let done = 0;
  options.progress(done, total.events + total.matches);
  let reading = readPage();
  try {
    for (;;) {
      const page = await reading;
      if (page === undefined) break;
      // The next page is read from the original while this one is written here.
      reading = signal.aborted ? Promise.resolve(undefined) : readPage();
      await writeLogPage(options, owners, page, report, retainedFrom);
      done += page.events.length + page.matches.length;
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

async function writeLogPage(
  options: ImportOptions,
  owners: ReadonlyMap<string, string>,
  page: ReadPage,
  report: LogReport,
  retainedFrom: number | undefined,
): Promise<void> {
  const events: EventsTable[] = [];
  const unreadableEvents = new Set<string>();
  for (const original of page.events) {
    report.events.read++;
    const outcome = importedEvent(original, options.times);
    if ('unreadable' in outcome) {
      unreadableEvents.add(String(original.uuid));
      list(report.events.unreadable, named(original.uuid), outcome.unreadable);
    } else events.push(outcome);
  }
  const matches: MatchesTable[] = [];
  for (const original of page.matches) {
    report.matches.read++;
    const outcome = unreadableEvents.has(String(original.event))
      ? { unreadable: 'its event could not be read' }
      : importedMatch(original, options.times, owners);
    if ('unreadable' in outcome) list(report.matches.unreadable, named(original.uuid), outcome.unreadable);
    else matches.push(outcome);
  }
  const written = await options.database.write(async (tx) => {
    const inserted = await insertNewEvents(tx, events);
    const rest = events.filter((event) => !inserted.has(event.uuid));
    const here = await eventsByUuid(
      tx,
      rest.map((event) => event.uuid),
    );
    const eventOutcomes = new Map<string, 'new' | 'present' | { conflict: string }>();
    const repeated: EventsTable[] = [];
    for (const event of events) {
      if (inserted.has(event.uuid)) eventOutcomes.set(event.uuid, 'new');
      else if (here.has(event.uuid)) eventOutcomes.set(event.uuid, compareEvent(here.get(event.uuid)!, event));
      else repeated.push({ ...event, event_id: repeatedEventId(event) });
    }
    const insertedAgain = await insertNewEvents(tx, repeated);
    for (const event of repeated) {
      eventOutcomes.set(event.uuid, insertedAgain.has(event.uuid) ? 'new' : { conflict: 'its source and id are taken here' });
    }
    // A match goes only with its event: under an event that conflicts it would tell of another one.
    const admitted = matches.filter((match) => typeof eventOutcomes.get(match.event_uuid) === 'string');
    const insertedMatches = await insertNewMatches(tx, admitted);
    const hereMatches = await matchesByUuid(
      tx,
      admitted.filter((match) => !insertedMatches.has(match.uuid)).map((match) => match.uuid),
    );
    const matchOutcomes = matches.map((match) => {
      if (insertedMatches.has(match.uuid)) return 'new' as const;
      const hereMatch = hereMatches.get(match.uuid);
      if (hereMatch !== undefined) return compareMatch(hereMatch, match);
      return { conflict: "its event is not the original's here" };
    });
    return { eventOutcomes, matchOutcomes, repeated: insertedAgain.size };
  });
  report.repeatedIds += written.repeated;
  for (const event of events) {
    const outcome = written.eventOutcomes.get(event.uuid)!;
    if (typeof outcome === 'object') list(report.events.conflicts, event.uuid, `event: ${outcome.conflict}; left as it is here`);
    else {
      count(report.events, outcome);
      if (outcome === 'new' && retainedFrom !== undefined && event.received < retainedFrom) report.olderThanRetention++;
    }
  }
  for (const [i, outcome] of written.matchOutcomes.entries()) {
    if (typeof outcome === 'object') list(report.matches.conflicts, matches[i]!.uuid, `match: ${outcome.conflict}; left as it is here`);
    else count(report.matches, outcome);
  }
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
