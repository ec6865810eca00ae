/**
 * Databases of the original service (pacifica-notifications), made as its `dbsync` leaves them
 * with peewee 3.14, for the import to read: PostgreSQL (a fresh database of the server
 * NOTIFICATIONS_TEST_DATABASE_URL names), MySQL/MariaDB (a fresh database of the server
 * NOTIFICATIONS_TEST_MYSQL_URL names, e.g. mysql://root@127.0.0.1:3306/) and a SQLite file.
 * Rows are written as peewee writes them: uuids as `uuid` on PostgreSQL and as 32 hex digits
 * elsewhere, times as naive local text (without fractions in MySQL's `datetime`).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { POSTGRES_TEST_URL } from './database.js';

export type OriginalKind = 'postgres' | 'mysql' | 'sqlite';
export type OriginalVersion = '3.0' | '2.0';

export interface OriginalSubscriptionRow {
  uuid: string;
  name: string;
  jsonpath: string;
  user: string;
  target_url: string;
  /** JSON text or NULL. */
  auth?: string | null;
  extensions?: string;
  version?: string;
  /** `YYYY-MM-DD HH:MM:SS.ffffff`, local time. */
  created: string;
  updated: string;
  deleted?: string | null;
  disabled?: string | null;
  error?: string | null;
}

export interface OriginalEventRow {
  uuid: string;
  jsondata: string;
  created: string;
}

export interface OriginalMatchRow {
  uuid: string;
  event: string;
  subscription: string;
  policy: string;
  target: string;
  created: string;
}

export interface OriginalDatabaseFixture {
  readonly kind: OriginalKind;
  /** The peewee_url its config would hold. */
  readonly url: string;
  /** Runs a statement of its dialect (`?` placeholders are written `$n` for PostgreSQL by the caller). */
  exec(sql: string, params?: unknown[]): Promise<void>;
  addSubscriptions(rows: readonly OriginalSubscriptionRow[]): Promise<void>;
  addEvents(rows: readonly OriginalEventRow[]): Promise<void>;
  addMatches(rows: readonly OriginalMatchRow[]): Promise<void>;
  /** A subscription's name and `updated`, as a PUT to the original would change them. */
  rename(uuid: string, name: string, updated: string): Promise<void>;
  cleanup(): Promise<void>;
}

export interface OriginalSource {
  readonly kind: OriginalKind;
  /** Why it cannot be made here; false when it can. */
  readonly skip: string | false;
  create(version?: OriginalVersion): Promise<OriginalDatabaseFixture>;
}

const MYSQL_VARIABLE = 'NOTIFICATIONS_TEST_MYSQL_URL';
export const MYSQL_TEST_URL = process.env[MYSQL_VARIABLE];

export function originalSources(): OriginalSource[] {
  return [
    { kind: 'sqlite', skip: false, create: createSqliteOriginal },
    {
      kind: 'postgres',
      skip: POSTGRES_TEST_URL ? false : 'PostgreSQL: set NOTIFICATIONS_TEST_DATABASE_URL',
      create: (version) => createPostgresOriginal(POSTGRES_TEST_URL!, version),
    },
    {
      kind: 'mysql',
      skip: MYSQL_TEST_URL ? false : `MySQL/MariaDB: set ${MYSQL_VARIABLE} (e.g. mysql://root@127.0.0.1:3306/)`,
      create: (version) => createMysqlOriginal(MYSQL_TEST_URL!, version),
    },
  ];
}

/** 32 hex digits, as peewee's UUIDField stores a uuid outside PostgreSQL. */
const hex = (uuid: string) => uuid.replaceAll('-', '');
/** MySQL's datetime keeps whole seconds. */
const seconds = (time: string | null | undefined) => (time == null ? null : time.replace(/\.\d+$/, ''));

interface Dialect {
  ddl(version: OriginalVersion): string[];
  uuid(value: string): string;
  time(value: string | null | undefined): string | null;
  /** The placeholder of the n-th parameter. */
  p(n: number): string;
  /** `"user"` or `` `user` ``. */
  user: string;
}

function ddl(types: { uuid: string; time: string; varchar: string; q: (name: string) => string }, version: OriginalVersion): string[] {
  const { uuid, time, varchar, q } = types;
  const statements = [
    `create table ${q('notificationsystem')} (${q('part')} ${varchar} not null primary key, ${q('value')} integer not null)`,
    `create table ${q('eventmatch')} (${q('uuid')} ${uuid} not null primary key, ${q('name')} ${varchar} not null, ${q('jsonpath')} text not null, ` +
      `${q('user')} ${varchar} not null, ${q('disabled')} ${time}, ${q('error')} text, ${q('target_url')} text not null, ` +
      `${q('version')} ${varchar} not null, ${q('extensions')} text not null, ${q('created')} ${time} not null, ` +
      `${q('updated')} ${time} not null, ${q('deleted')} ${time}, ${q('auth')} text)`,
    `create index ${q('eventmatch_user')} on ${q('eventmatch')} (${q('user')})`,
    `create index ${q('eventmatch_created')} on ${q('eventmatch')} (${q('created')})`,
  ];
  if (version === '3.0') {
    statements.push(
      `create table ${q('eventlog')} (${q('uuid')} ${uuid} not null primary key, ${q('jsondata')} text not null, ${q('created')} ${time} not null)`,
      `create table ${q('eventlogmatch')} (${q('uuid')} ${uuid} not null primary key, ${q('event_log_id')} ${uuid} not null, ` +
        `${q('event_match_id')} ${uuid} not null, ${q('policy_status_code')} text not null, ${q('policy_resp_body')} text not null, ` +
        `${q('target_status_code')} text not null, ${q('target_resp_body')} text not null, ${q('created')} ${time} not null, ` +
        `foreign key (${q('event_log_id')}) references ${q('eventlog')} (${q('uuid')}), ` +
        `foreign key (${q('event_match_id')}) references ${q('eventmatch')} (${q('uuid')}))`,
      `create index ${q('eventlogmatch_event_log_id')} on ${q('eventlogmatch')} (${q('event_log_id')})`,
      `create index ${q('eventlogmatch_event_match_id')} on ${q('eventlogmatch')} (${q('event_match_id')})`,
    );
  }
  return statements;
}

const POSTGRES: Dialect = {
  ddl: (version) => ddl({ uuid: 'uuid', time: 'timestamp', varchar: 'varchar(255)', q: (n) => `"${n}"` }, version),
  uuid: (value) => value,
  time: (value) => value ?? null,
  p: (n) => `$${n}`,
  user: '"user"',
};
const MYSQL: Dialect = {
  ddl: (version) => ddl({ uuid: 'varchar(40)', time: 'datetime', varchar: 'varchar(255)', q: (n) => `\`${n}\`` }, version),
  uuid: hex,
  time: seconds,
  p: () => '?',
  user: '`user`',
};
const SQLITE: Dialect = {
  ddl: (version) => ddl({ uuid: 'varchar(40)', time: 'datetime', varchar: 'varchar(255)', q: (n) => `"${n}"` }, version),
  uuid: hex,
  time: (value) => value ?? null,
  p: () => '?',
  user: '"user"',
};

type Exec = (sql: string, params?: unknown[]) => Promise<void>;

function fixture(kind: OriginalKind, url: string, dialect: Dialect, exec: Exec, cleanup: () => Promise<void>): OriginalDatabaseFixture {
  const { p } = dialect;
  const values = (n: number) => Array.from({ length: n }, (_, i) => p(i + 1)).join(', ');
  return {
    kind,
    url,
    exec,
    async addSubscriptions(rows) {
      for (const s of rows) {
        await exec(
          `insert into eventmatch (uuid, name, jsonpath, ${dialect.user}, disabled, error, target_url, version, extensions, created, updated, deleted, auth) values (${values(13)})`,
          [
            dialect.uuid(s.uuid),
            s.name,
            s.jsonpath,
            s.user,
            dialect.time(s.disabled),
            s.error ?? null,
            s.target_url,
            s.version ?? 'v0.1',
            s.extensions ?? '{}',
            dialect.time(s.created),
            dialect.time(s.updated),
            dialect.time(s.deleted),
            s.auth === undefined ? null : s.auth,
          ],
        );
      }
    },
    async addEvents(rows) {
      for (const e of rows)
        await exec(`insert into eventlog (uuid, jsondata, created) values (${values(3)})`, [
          dialect.uuid(e.uuid),
          e.jsondata,
          dialect.time(e.created),
        ]);
    },
    async addMatches(rows) {
      for (const m of rows) {
        await exec(
          `insert into eventlogmatch (uuid, event_log_id, event_match_id, policy_status_code, policy_resp_body, target_status_code, target_resp_body, created) values (${values(8)})`,
          [dialect.uuid(m.uuid), dialect.uuid(m.event), dialect.uuid(m.subscription), m.policy, '', m.target, '', dialect.time(m.created)],
        );
      }
    },
    rename: (uuid, name, updated) =>
      exec(`update eventmatch set name = ${p(1)}, updated = ${p(2)} where uuid = ${p(3)}`, [
        name,
        dialect.time(updated),
        dialect.uuid(uuid),
      ]),
    cleanup,
  };
}

async function schema(exec: Exec, dialect: Dialect, version: OriginalVersion): Promise<void> {
  for (const statement of dialect.ddl(version)) await exec(statement);
  const [major, minor] = version.split('.').map(Number);
  await exec(`insert into notificationsystem (part, value) values (${dialect.p(1)}, ${dialect.p(2)}), (${dialect.p(3)}, ${dialect.p(4)})`, [
    'major',
    major,
    'minor',
    minor,
  ]);
}

export async function createSqliteOriginal(version: OriginalVersion = '3.0'): Promise<OriginalDatabaseFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'pacifica-original-'));
  const path = join(dir, 'notify.db');
  const db = new Sqlite(path);
  // As peewee opens it (better-sqlite3 turns them on): the original's foreign keys go unchecked.
  db.pragma('foreign_keys = OFF');
  const exec: Exec = async (sql, params = []) => {
    db.prepare(sql).run(...params);
  };
  await schema(exec, SQLITE, version);
  return fixture('sqlite', `sqlite:///${path}`, SQLITE, exec, async () => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
}

export async function createPostgresOriginal(base: string, version: OriginalVersion = '3.0'): Promise<OriginalDatabaseFixture> {
  const name = `pacifica_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  url.search = '';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  const exec: Exec = async (sql, params = []) => {
    await client.query(sql, params);
  };
  await schema(exec, POSTGRES, version);
  return fixture('postgres', url.toString(), POSTGRES, exec, async () => {
    await client.end();
    const drop = new pg.Client({ connectionString: base });
    await drop.connect();
    try {
      await drop.query(`drop database if exists ${name} with (force)`);
    } finally {
      await drop.end();
    }
  });
}

export async function createMysqlOriginal(base: string, version: OriginalVersion = '3.0'): Promise<OriginalDatabaseFixture> {
  const name = `pacifica_${randomBytes(6).toString('hex')}`;
  const server = new URL(base);
  const connection = await mysql.createConnection({
    host: server.hostname,
    port: Number(server.port || 3306),
    user: decodeURIComponent(server.username) || 'root',
    password: decodeURIComponent(server.password),
    multipleStatements: false,
  });
  await connection.query(`create database ${name} character set utf8mb4`);
  await connection.changeUser({ database: name });
  const exec: Exec = async (sql, params = []) => {
    await connection.execute(sql, params as (string | number | null)[]);
  };
  await schema(exec, MYSQL, version);
  const url = new URL(base);
  url.pathname = `/${name}`;
  if (url.username === '') url.username = 'root';
  return fixture('mysql', url.toString(), MYSQL, exec, async () => {
    await connection.query(`drop database if exists ${name}`);
    await connection.end();
  });
}
