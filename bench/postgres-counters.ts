/**
 * PostgreSQL's own counters of what the service did in a database of the bench's own (created
 * here and dropped after): commits (pg_stat_database.xact_commit, every transaction, reads
 * included), rows inserted and updated (pg_stat_user_tables, in total and for `matches`), and
 * WAL records and bytes (pg_stat_wal, PostgreSQL 14 and later). xact_commit also counts what is
 * not a statement of the service: the transaction each new connection's start-up runs, and
 * autovacuum's in the database, whose runs (autovacuum and autoanalyze of a table, catalogs
 * included) are counted beside it.
 *
 * pg_stat_wal counts the whole cluster: its figures are the service's only on a quiet cluster.
 * Each snapshot also reads the commits of every other database, which says how quiet it was.
 * A backend publishes its counts when it goes idle, but from PostgreSQL 15 at most once a
 * second: counts made within a second of its last publication wait for its idle timer, 10 s
 * (PGSTAT_IDLE_INTERVAL; earlier versions sent them to the collector within half a second). A
 * snapshot is read STATS_FLUSH_MS after the service's work ended. Each snapshot is one
 * statement on one connection: one commit of the bench's own, subtracted (its own counts are
 * published at once: pg_stat_force_next_flush).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** Longer than the 10 s an idle backend may hold its counts before publishing them (PostgreSQL 15 and later). */
export const STATS_FLUSH_MS = 11_000;

export interface PostgresSnapshot {
  commits: number;
  otherCommits: number;
  inserted: number;
  updated: number;
  hotUpdated: number;
  matchesUpdated: number;
  walRecords: number;
  walBytes: number;
  autovacuums: number;
}

export interface BenchPostgres {
  /** The bench's database, for the service (through the counting proxy, if wanted). */
  readonly url: string;
  readonly serverVersion: string;
  snapshot(): Promise<PostgresSnapshot>;
  /** Ends the bench's connection and drops the database. */
  drop(): Promise<void>;
}

/** A fresh database on the server `base` names, and a connection to read its counters. */
export async function createBenchPostgres(base: string): Promise<BenchPostgres> {
  const name = `bench_counts_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  url.searchParams.delete('schema');
  const reader = new pg.Client({ connectionString: url.toString() });
  await reader.connect();
  const serverVersion = (await reader.query<{ server_version: string }>('show server_version')).rows[0]!.server_version;
  const versionNumber = Number((await reader.query<{ v: string }>(`select current_setting('server_version_num') as v`)).rows[0]!.v);
  // From 15, a backend's counts wait up to a second; the reader's own (its last snapshot's commit) are published at once.
  const flush = versionNumber >= 150_000 ? 'pg_stat_force_next_flush(), ' : '';
  const wal = versionNumber >= 140_000 ? '(select wal_records from pg_stat_wal), (select wal_bytes from pg_stat_wal)' : 'null, null';
  return {
    url: url.toString(),
    serverVersion,
    snapshot: async () => {
      const { rows } = await reader.query<Array<string | null>>({
        rowMode: 'array',
        text: `select ${flush}
          (select xact_commit from pg_stat_database where datname = current_database()),
          (select sum(xact_commit) from pg_stat_database where datname <> current_database()),
          (select coalesce(sum(n_tup_ins), 0) from pg_stat_user_tables),
          (select coalesce(sum(n_tup_upd), 0) from pg_stat_user_tables),
          (select coalesce(sum(n_tup_hot_upd), 0) from pg_stat_user_tables),
          (select coalesce(sum(n_tup_upd), 0) from pg_stat_user_tables where relname = 'matches'),
          ${wal},
          (select coalesce(sum(autovacuum_count + autoanalyze_count), 0) from pg_stat_all_tables)`,
      });
      const values = rows[0]!.slice(flush ? 1 : 0).map((v) => (v === null ? NaN : Number(v)));
      const [commits, otherCommits, inserted, updated, hotUpdated, matchesUpdated, walRecords, walBytes, autovacuums] = values as number[];
      return {
        commits,
        otherCommits,
        inserted,
        updated,
        hotUpdated,
        matchesUpdated,
        walRecords,
        walBytes,
        autovacuums,
      } as PostgresSnapshot;
    },
    drop: async () => {
      await reader.end();
      try {
        await admin.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** What happened between two snapshots, less the reader's own commit (the first snapshot's). */
export function difference(before: PostgresSnapshot, after: PostgresSnapshot): PostgresSnapshot {
  const delta = (key: keyof PostgresSnapshot) => after[key] - before[key];
  return {
    commits: delta('commits') - 1,
    otherCommits: delta('otherCommits'),
    inserted: delta('inserted'),
    updated: delta('updated'),
    hotUpdated: delta('hotUpdated'),
    matchesUpdated: delta('matchesUpdated'),
    walRecords: delta('walRecords'),
    walBytes: delta('walBytes'),
    autovacuums: delta('autovacuums'),
  };
}
