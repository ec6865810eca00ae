/**
 * The original service's database, as its `peewee_url` names it (playhouse.db_url): PostgreSQL,
 * MySQL or MariaDB, or a SQLite file.
 */
import { maskUrlPassword } from '../url-password.js';

export type SourceKind = 'postgres' | 'mysql' | 'sqlite';

/** A database server: PostgreSQL, or MySQL or MariaDB. */
export interface ServerSource {
  kind: 'postgres' | 'mysql';
  url: string;
  host: string;
  port: number;
  database: string;
  description: string;
}

export interface FileSource {
  kind: 'sqlite';
  path: string;
  description: string;
}

export type SourceLocation = ServerSource | FileSource;

/** What `--from` takes, for the message that refuses anything else. */
export const SOURCE_KINDS = 'postgres://, postgresql://, mysql:// (MySQL or MariaDB) or sqlite:///path';

/** playhouse.db_url's schemes for the three databases, with its pooled and extended variants. */
const SCHEMES: Record<string, SourceKind> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  'postgres+pool': 'postgres',
  'postgresql+pool': 'postgres',
  postgresext: 'postgres',
  'postgresext+pool': 'postgres',
  mysql: 'mysql',
  'mysql+pool': 'mysql',
  sqlite: 'sqlite',
  'sqlite+pool': 'sqlite',
  sqliteext: 'sqlite',
  'sqliteext+pool': 'sqlite',
};

const DEFAULT_PORTS: Record<'postgres' | 'mysql', number> = { postgres: 5432, mysql: 3306 };

/** Where `text` points, or a message saying why it cannot be read (naming the kinds it can). */
export function readSourceUrl(text: string): SourceLocation | string {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase();
  const kind = scheme === undefined ? undefined : SCHEMES[scheme];
  if (kind === undefined) {
    const what = scheme === undefined ? 'not a URL' : `a ${scheme}: URL`;
    return `--from: ${what}; the original's peewee_url is read from ${SOURCE_KINDS}`;
  }
  if (kind === 'sqlite') {
    // sqlite:///relative/file.db and sqlite:////absolute/file.db, as peewee reads them.
    const path = /^[^:]+:\/\/\/(.+)$/.exec(text)?.[1];
    if (path === undefined) return '--from: a SQLite URL is sqlite:///relative/path or sqlite:////absolute/path';
    if (path === ':memory:') return '--from: sqlite:///:memory: holds nothing to import';
    return { kind, path: decodeURIComponent(path.split('?')[0]!), description: `sqlite:///${path.split('?')[0]!}` };
  }
  let url: URL;
  try {
    url = new URL(text.replace(/^[^:]+:/, `${kind === 'postgres' ? 'postgres' : 'mysql'}:`));
  } catch {
    return `--from: ${maskUrlPassword(text)} is not a URL the original could have used (${kind}://user:password@host:port/database)`;
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (url.hostname === '' || database === '')
    return `--from: ${maskUrlPassword(text)} names no host or no database (${kind}://user:password@host:port/database)`;
  return {
    kind,
    url: url.toString(),
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? DEFAULT_PORTS[kind] : Number(url.port),
    database,
    description: maskUrlPassword(text),
  };
}
