/**
 * Several PostgreSQL statements sent in one write, answered in one round trip: each is parsed,
 * bound and executed (the extended protocol), and one Sync ends them all. They run in one
 * transaction: the one open on the connection, or else one of their own that commits at the Sync
 * and is rolled back if any of them fails (the rest are then skipped). Each still takes its own
 * snapshot (READ COMMITTED), after the statements before it have run, so a statement sees what
 * committed while an earlier one waited for a lock.
 *
 * Each statement sent costs the main thread a socket write and PostgreSQL a wakeup: a create
 * counted against its owner's limit was five statements (BEGIN, the owners' locks, the count, the
 * insert, COMMIT), and those writes were a fifth of the main thread's time.
 *
 * Kysely sends each statement alone, so the statements travel to the connection as the one
 * parameter of a placeholder query (`inOneRoundTrip`), which the pool's clients recognise
 * (`isRoundTrip`) and submit as one `RoundTripQuery`.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import pg from 'pg';
import type { Database } from './tables.js';

/** The statements of one round trip, as Kysely carries them to the connection. */
class RoundTrip {
  constructor(readonly statements: readonly CompiledQuery[]) {}
}

/** What the pool's client answers for a round trip: the rows of each statement, in order. */
export interface RoundTripResult {
  command: 'ROUND TRIP';
  rowCount: number;
  rows: unknown[][];
}

/**
 * Runs `statements` in one round trip on `db`'s connection (in its transaction, if it is one),
 * and answers the rows of each. Only on PostgreSQL.
 */
export async function inOneRoundTrip(db: Kysely<Database>, statements: readonly CompiledQuery[]): Promise<unknown[][]> {
  const result = await db.executeQuery<unknown[]>(CompiledQuery.raw('-- statements in one round trip', [new RoundTrip(statements)]));
  return result.rows;
}

/** The statements, when `parameters` are those of a round trip's placeholder query. */
export function isRoundTrip(parameters: readonly unknown[] | undefined): readonly CompiledQuery[] | undefined {
  const only = parameters?.length === 1 ? parameters[0] : undefined;
  return only instanceof RoundTrip ? only.statements : undefined;
}

/** Submits `statements` on `client` as one round trip. */
async function submitRoundTrip(client: pg.ClientBase, statements: readonly CompiledQuery[]): Promise<RoundTripResult> {
  return roundTripResult(await resultsOf(client, statements));
}

function roundTripResult(results: readonly pg.QueryResult[]): RoundTripResult {
  return { command: 'ROUND TRIP', rowCount: results.length, rows: results.map((result) => result.rows) };
}

/** Each statement's result, in order. */
function resultsOf(client: pg.ClientBase, statements: readonly CompiledQuery[]): Promise<pg.QueryResult[]> {
  return new Promise((resolve, reject) => {
    client.query(
      new RoundTripQuery(statements, (error, results) => {
        if (error) return reject(error);
        // pg answers a single result as itself, several as an array.
        resolve(Array.isArray(results) ? results : [results]);
      }),
    );
  });
}

const BEGIN = CompiledQuery.raw('begin');

/**
 * A connection's statements, with a transaction's BEGIN sent in the same write as its first
 * statement: Kysely sends BEGIN alone and waits for its answer, a round trip that told nothing
 * (it was one write in eight to PostgreSQL under load). BEGIN is answered here at once and held;
 * the next statement goes with it, or, when it is the transaction's COMMIT or ROLLBACK, nothing
 * goes at all. A statement without parameters goes after BEGIN as before: its text may hold
 * several statements, which only the simple protocol takes.
 */
export function beginWithFirstStatement(
  client: pg.ClientBase,
): (text: string, parameters: readonly unknown[]) => Promise<pg.QueryResult | RoundTripResult> {
  let beginHeld = false;
  const send = (text: string, parameters: readonly unknown[]) => {
    const statements = isRoundTrip(parameters);
    return statements ? submitRoundTrip(client, statements) : client.query(text, parameters as unknown[]);
  };
  const sendWithBegin = async (text: string, parameters: readonly unknown[]) => {
    const statements = isRoundTrip(parameters);
    if (statements === undefined && (parameters.length === 0 || !parameters.every(isWireValue))) {
      await client.query(BEGIN.sql);
      return send(text, parameters);
    }
    const results = await resultsOf(client, [BEGIN, ...(statements ?? [CompiledQuery.raw(text, [...parameters])])]);
    return statements ? roundTripResult(results.slice(1)) : results[1]!;
  };
  // Not async: every statement of the pool passes here, and most go straight on.
  return (text, parameters) => {
    // Kysely's own words for a transaction without options.
    if (text === 'begin') {
      beginHeld = true;
      return Promise.resolve(answered(text));
    }
    if (!beginHeld) return send(text, parameters);
    beginHeld = false;
    if (text === 'commit' || text === 'rollback') return Promise.resolve(answered(text));
    return sendWithBegin(text, parameters);
  };
}

/** What PostgreSQL answers BEGIN, COMMIT or ROLLBACK with. */
function answered(text: string): pg.QueryResult {
  return { command: text.toUpperCase(), rowCount: null, rows: [], fields: [], oid: 0 } as unknown as pg.QueryResult;
}

type Results = pg.QueryResult | pg.QueryResult[];

/**
 * pg's Query, sending its statements (extended protocol, unnamed statement and portal) and one
 * Sync where it would send one statement. pg gathers one result per statement, as it does for a
 * simple query of several statements.
 */
class RoundTripQuery extends pg.Query {
  private readonly statements: ReadonlyArray<{ sql: string; values: Array<string | null> }>;

  /** Throws, before anything is sent, for a parameter that cannot go as text. */
  constructor(statements: readonly CompiledQuery[], callback: (error: Error | undefined, results: Results) => void) {
    super(statements.map((statement) => statement.sql).join(';\n'), callback as unknown as ConstructorParameters<typeof pg.Query>[1]);
    this.statements = statements.map((statement) => ({ sql: statement.sql, values: statement.parameters.map(wireValue) }));
  }

  /** Asked by pg's `submit`: the extended protocol, by way of `prepare`. */
  requiresPreparation(): boolean {
    return true;
  }

  /** Called by pg's `submit` with the stream corked: every message below goes out in one write. */
  prepare(connection: pg.Connection): void {
    for (const statement of this.statements) {
      connection.parse({ text: statement.sql, name: '', types: [] }, true);
      connection.bind({ values: statement.values }, true);
      connection.describe({ type: 'P', name: '' }, true);
      connection.execute({ portal: '' }, true);
    }
    connection.sync();
  }
}

/** A parameter as text on the wire: the statements sent this way take strings, numbers and nulls. */
function wireValue(value: unknown): string | null {
  if (!isWireValue(value)) throw new TypeError(`a statement of a round trip takes strings, numbers and nulls, not ${typeof value}`);
  return value === null || value === undefined ? null : String(value);
}

function isWireValue(value: unknown): boolean {
  return value === null || value === undefined || typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint';
}
