/**
 * Rows brought from another database (import-pacifica): each inserted unless its table holds a
 * row with the same key already, saying which were new; and the rows that were there, for the
 * importer to compare.
 */
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { chunks } from '../chunks.js';
import type { Capabilities, DatabaseHandle } from '../connect.js';
import { notificationOf } from '../subscription-notifications.js';
import { SUBSCRIPTION_ROWS_PER_STATEMENT } from './subscriptions.js';
import type { Database, EventsTable, MatchesTable, SubscriptionRow } from '../tables.js';

// Both databases take at least 32,766 parameters a statement; events have 8 columns, matches 14.
const EVENT_ROWS_PER_STATEMENT = 2_000;
const MATCH_ROWS_PER_STATEMENT = 1_000;

/**
 * SQLite: room in this process's page cache for the indexes an import writes into. The imported
 * uuids are random, so each page of rows lands all over each index; with SQLite's default cache
 * (2 MB) index pages were read again from the file at every page. 16 MB: the command stays under
 * 300 MB resident; 32 and 64 MB were no faster once pages were written a row a statement
 * (docs/benchmarks.md, import). PostgreSQL keeps its own.
 */
export async function makeRoomForImport(database: DatabaseHandle): Promise<void> {
  if (database.capabilities.oneWriter) await sql`pragma cache_size = ${sql.lit(-IMPORT_CACHE_KIB)}`.execute(database.db);
}

const IMPORT_CACHE_KIB = 16 * 1024;

/**
 * The subscriptions of `rows` whose uuid is new, inserted; the uuids of those inserted. On
 * PostgreSQL the other instances hear of each one on commit, as of any write.
 */
export async function insertNewSubscriptions(
  db: Kysely<Database>,
  capabilities: Capabilities,
  rows: readonly SubscriptionRow[],
): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const chunk of chunks(rows, SUBSCRIPTION_ROWS_PER_STATEMENT)) {
    const insert = db
      .insertInto('subscriptions')
      .values(chunk)
      .onConflict((conflict) => conflict.column('uuid').doNothing())
      .returning('uuid');
    const written = capabilities.notify
      ? await db
          .with('written', () => insert)
          .selectFrom('written')
          .select(['written.uuid', notificationOf('written.uuid')])
          .execute()
      : await insert.execute();
    for (const row of written) inserted.add(row.uuid);
  }
  return inserted;
}

/**
 * A page of an imported event log: events, and matches of those events. The events' texts
 * (most of a page's bytes) travel as one buffer of UTF-8, so that the page crosses to SQLite's
 * thread with the buffer moved, not copied, and SQLite takes each text from it as it is: as
 * strings, each page was cloned into that thread's heap, which grew by 70 to 150 MB.
 */
export interface ImportedLogPage {
  events: ReadonlyArray<Omit<EventsTable, 'body'>>;
  /** Event i's text is `texts[ends[i - 1] ?? 0, ends[i])`. */
  texts: Uint8Array;
  ends: readonly number[];
  matches: readonly MatchesTable[];
}

/** The page of these rows, its texts in one buffer. */
export function importedLogPage(events: readonly EventsTable[], matches: readonly MatchesTable[]): ImportedLogPage {
  const texts = Buffer.allocUnsafeSlow(events.reduce((bytes, event) => bytes + Buffer.byteLength(event.body), 0));
  const ends: number[] = [];
  let end = 0;
  for (const event of events) ends.push((end += texts.write(event.body, end)));
  return { events: events.map(({ body: _, ...event }) => event), texts, ends, matches };
}

/** The buffers a page's message moves to another thread rather than copies. */
export const importedLogPageTransfers = (page: ImportedLogPage): ArrayBuffer[] => [page.texts.buffer as ArrayBuffer];

/** What writing a page came to; uuids in the page's order. */
export interface ImportedLogPageWritten {
  newEvents: string[];
  /** New events kept under `id#uuid` (`repeatedEventId`): an event here has their source and id. */
  repeatedEvents: string[];
  /** Events whose uuid is here already with the same text and time. */
  presentEvents: string[];
  /** Events whose uuid is here with another text or time, and what differs; their matches are not written. */
  otherEvents: Array<{ uuid: string; differs: string }>;
  newMatches: string[];
  /** The rows here with the uuids of matches not written, to be compared by the caller. */
  presentMatches: MatchesTable[];
}

/**
 * Writes a page of an imported log in transaction `tx`: each event unless its uuid is here, and
 * each match of an event that is (now) here as imported, unless its uuid is here. One operation
 * (operations.ts): on SQLite the page crosses to its thread once, and its statements run there
 * back to back.
 */
export async function writeImportedLogPage(
  db: Kysely<Database>,
  capabilities: Capabilities,
  page: ImportedLogPage,
): Promise<ImportedLogPageWritten> {
  const insertNew = capabilities.inProcess ? insertEachNew : insertNewInChunks;
  // SQLite reads a text from the buffer (cast(? as text)); a database over the network is sent strings.
  const decoder = new TextDecoder();
  const events = page.events.map((event, i) => {
    const text = page.texts.subarray(page.ends[i - 1] ?? 0, page.ends[i]);
    return { ...event, traceparent: event.traceparent ?? null, body: capabilities.inProcess ? text : decoder.decode(text) };
  });
  const textOf = (event: (typeof events)[number]) => (typeof event.body === 'string' ? event.body : decoder.decode(event.body));
  const insertNewEvents = (rows: typeof events) => insertNew(db, 'events', rows as EventsTable[], EVENT_ROWS_PER_STATEMENT);
  const inserted = await insertNewEvents(events);
  const notInserted = events.filter((event) => !inserted.has(event.uuid));
  const here = await rowsByUuid(
    db,
    'events',
    notInserted.map((event) => event.uuid),
    EVENT_ROWS_PER_STATEMENT,
  );
  const written: ImportedLogPageWritten = {
    newEvents: [],
    repeatedEvents: [],
    presentEvents: [],
    otherEvents: [],
    newMatches: [],
    presentMatches: [],
  };
  const repeated: typeof events = [];
  for (const event of notInserted) {
    const there = here.get(event.uuid);
    if (there === undefined) {
      repeated.push({ ...event, event_id: repeatedEventId(event) });
      continue;
    }
    const sameText = there.body === textOf(event);
    if (sameText && there.received === event.received) written.presentEvents.push(event.uuid);
    else
      written.otherEvents.push({
        uuid: event.uuid,
        differs: sameText ? 'time' : there.received === event.received ? 'text' : 'text and time',
      });
  }
  const insertedAgain = await insertNewEvents(repeated);
  for (const event of repeated) {
    if (insertedAgain.has(event.uuid)) written.repeatedEvents.push(event.uuid);
    else written.otherEvents.push({ uuid: event.uuid, differs: 'source and id (taken here)' });
  }
  written.newEvents = events.filter((event) => inserted.has(event.uuid) || insertedAgain.has(event.uuid)).map((event) => event.uuid);
  // A match goes only with its event as imported: under another event of the same uuid it would tell of that one.
  const other = new Set(written.otherEvents.map((event) => event.uuid));
  const admitted = page.matches.filter((match) => !other.has(match.event_uuid));
  const insertedMatches = await insertNew(db, 'matches', admitted, MATCH_ROWS_PER_STATEMENT);
  written.newMatches = admitted.filter((match) => insertedMatches.has(match.uuid)).map((match) => match.uuid);
  const hereMatches = await rowsByUuid(
    db,
    'matches',
    admitted.filter((match) => !insertedMatches.has(match.uuid)).map((match) => match.uuid),
    MATCH_ROWS_PER_STATEMENT,
  );
  written.presentMatches = [...hereMatches.values()];
  return written;
}

/**
 * The id under which an imported event is kept when an event here has its source and id (the
 * original service did not refuse a repeated event; this one logs each (source, id) once): the
 * id and the event's own uuid, so that both stay, each under its uuid.
 */
export function repeatedEventId(event: Pick<EventsTable, 'event_id' | 'uuid'>): string {
  return `${event.event_id}#${event.uuid}`;
}

/**
 * The rows of `rows` whose keys are new (an event's uuid and its source and id; a match's
 * uuid), inserted; the uuids of those inserted. A statement a row, prepared once: in SQLite's
 * thread a 520,000-row log went in 25 % faster than as rows of long VALUES lists, which SQLite
 * parses anew for each, with RETURNING.
 */
async function insertEachNew<T extends 'events' | 'matches'>(
  db: Kysely<Database>,
  table: T,
  rows: readonly Database[T][],
): Promise<Set<string>> {
  const inserted = new Set<string>();
  if (rows.length === 0) return inserted;
  const first = rows[0]!;
  const columns = Object.keys(first) as Array<keyof Database[T]>;
  // A text given as UTF-8 bytes (ImportedLogPage) is bound as a blob and stored as the text it spells.
  const values = columns.map((column) => (first[column] instanceof Uint8Array ? 'cast(? as text)' : '?'));
  const text = `insert into ${table} (${columns.join(', ')}) values (${values.join(', ')}) on conflict do nothing`;
  for (const row of rows) {
    const result = await db.executeQuery(
      CompiledQuery.raw(
        text,
        columns.map((column) => row[column]),
      ),
    );
    if (result.numAffectedRows !== undefined && result.numAffectedRows > 0n) inserted.add(row.uuid);
  }
  return inserted;
}

/** `insertEachNew` in as few statements as the parameter limits allow, for a database a statement is a round trip away. */
async function insertNewInChunks<T extends 'events' | 'matches'>(
  db: Kysely<Database>,
  table: T,
  rows: readonly Database[T][],
  perStatement: number,
): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (const chunk of chunks(rows, perStatement)) {
    const written = await db
      .insertInto(table as 'events')
      .values(chunk as EventsTable[])
      .onConflict((conflict) => conflict.doNothing())
      .returning('uuid')
      .execute();
    for (const row of written) inserted.add(row.uuid);
  }
  return inserted;
}

async function rowsByUuid<T extends 'events' | 'matches'>(
  db: Kysely<Database>,
  table: T,
  uuids: readonly string[],
  perStatement: number,
): Promise<Map<string, Database[T]>> {
  const found = new Map<string, Database[T]>();
  for (const chunk of chunks(uuids, perStatement)) {
    for (const row of (await db
      .selectFrom(table as 'events')
      .selectAll()
      .where('uuid', 'in', chunk)
      .execute()) as Database[T][])
      found.set(row.uuid, row);
  }
  return found;
}
