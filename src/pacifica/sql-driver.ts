/**
 * What reading the original's database needs of its client, the same for the three kinds it
 * may be: statements with bound parameters, a long result read a page at a time, and the
 * names of its tables and columns. Each kind's client is loaded only when a URL of its kind is
 * given (the server never loads any of them).
 */
import type { ServerSource, SourceLocation } from './source-url.js';

/** A value as the original's columns hold it: text, numbers, NULL. */
export type SourceValue = string | number | bigint | null;
export type SourceRow = Record<string, SourceValue>;

export interface SqlDriver {
  /** `"name"` or `` `name` ``. */
  quote(identifier: string): string;
  /** The placeholder of the `index`-th parameter (1-based): `$1` or `?`. */
  param(index: number): string;
  query(sql: string, params?: readonly SourceValue[]): Promise<SourceRow[]>;
  /**
   * The rows of one long query, `size()` at a time (asked before each page), read as they are
   * consumed: the whole result is never in memory. Other queries may run while it is being read.
   */
  pages(sql: string, params: readonly SourceValue[], size: () => number): AsyncIterable<SourceRow[]>;
  tables(): Promise<string[]>;
  columns(table: string): Promise<string[]>;
  close(): Promise<void>;
}

/** The source could not be reached or read: exit 1, naming where it is. */
export class SourceUnreachable extends Error {
  override readonly name = 'SourceUnreachable';
}

/** How long connecting may take: the command says it cannot reach the source within 10 s. */
export const CONNECT_TIMEOUT_MS = 8_000;

/** Opens the client for `location`'s kind. */
export async function openDriver(location: SourceLocation): Promise<SqlDriver> {
  switch (location.kind) {
    case 'postgres':
      return (await import('./postgres-driver.js')).openPostgresDriver(location);
    case 'mysql':
      return (await import('./mysql-driver.js')).openMysqlDriver(location);
    case 'sqlite':
      return (await import('./sqlite-driver.js')).openSqliteDriver(location);
  }
}

/** `rows` in pages of `size()` rows (asked before each page), as they are consumed. */
export async function* inPages(rows: AsyncIterable<unknown> | Iterable<unknown>, size: () => number): AsyncGenerator<SourceRow[]> {
  let page: SourceRow[] = [];
  for await (const row of rows) {
    page.push(row as SourceRow);
    if (page.length >= size()) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}

/** `host:port` of a networked source, for the messages that say it cannot be reached. */
export function whereIs(location: ServerSource): string {
  const host = location.host.includes(':') ? `[${location.host}]` : location.host;
  return `${host}:${location.port}`;
}

/** The first line of an error's message. */
export function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message || String((error as { code?: unknown }).code ?? error.name) : String(error);
  return text.split('\n')[0] ?? text;
}
