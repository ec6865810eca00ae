/**
 * Lease churn under slow targets (PostgreSQL): what each event costs the `matches` rows and the
 * write-ahead log while its deliveries wait. 999 subscriptions, three matching each event (three
 * owners), 3,000 events at 300/s, the target answering each delivery after 1 s, then drained.
 *
 *   node dist/bench/lease-churn.js postgres://postgres@127.0.0.1:5499/postgres
 *
 * The URL names a server of its own (its `pg_stat_wal` is the whole server's); each run makes a
 * database there. Counted from the statistics after the server process has stopped (its
 * backends flush them as they exit): `matches` row updates (HOT), WAL records and bytes,
 * commits, and, where pg_stat_statements is loaded, the statements that updated most rows.
 */
import pg from 'pg';
import { startCountingTarget } from './counting-target.js';
import { pacedLoad } from './receive.js';
import { startBenchServer } from './server.js';

const RATE = 300;
const SECONDS = 10;
const SUBSCRIPTIONS = 999;
const PROJECTS = 333;

const adminUrl = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5499/postgres';
const name = `churn_${Date.now()}`;
const admin = new pg.Client(adminUrl);
await admin.connect();
await admin.query(`create database ${name}`);
const databaseUrl = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();

const target = await startCountingTarget({ delayMs: 1_000 });
const policy = await startCountingTarget();
const server = await startBenchServer(databaseUrl, {
  NOTIFICATIONS_POLICY_URL: policy.url,
  ...JSON.parse(process.env.CHURN_ENV ?? '{}'),
});
// Settings to try on the new database, e.g. CHURN_SQL='alter table matches set (fillfactor = 70)'.
if (process.env.CHURN_SQL) {
  const there = new pg.Client(databaseUrl);
  await there.connect();
  await there.query(process.env.CHURN_SQL);
  await there.end();
}
let events = 0;
try {
  for (let start = 0; start < SUBSCRIPTIONS; start += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, SUBSCRIPTIONS - start) }, async (_, i) => {
        const project = (start + i) % PROJECTS;
        const response = await fetch(`${server.url}/eventmatch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'http-remote-user': `bench-${Math.floor((start + i) / PROJECTS)}` },
          body: JSON.stringify({
            name: `project ${project}`,
            jsonpath: `$.data[?@.destinationTable == 'Transactions.project' && @.value == '${project}']`,
            target_url: target.url,
          }),
        });
        if (response.status !== 200) throw new Error(`creating a subscription: ${response.status}`);
      }),
    );
  }
  // The server's backends flush their statistics at most every 10 s when idle.
  await new Promise((r) => setTimeout(r, 11_000));
  // Full-page images follow a checkpoint: each run starts from one.
  await admin.query('checkpoint');
  const before = await counts(admin, name);
  const startLsn = (await admin.query('select pg_current_wal_lsn() as lsn')).rows[0].lsn as string;
  await admin.query('select pg_stat_statements_reset()').catch(() => undefined);
  const started = performance.now();
  const answered = await pacedLoad(`${server.url}/receive`, 'churn', SECONDS, RATE);
  events = answered.ok;
  // The backlog is drained with the target answering at once (16 connections at 1 s would take minutes).
  await new Promise((r) => setTimeout(r, Number(process.env.CHURN_SLOW_S ?? 0) * 1000));
  target.answerAtOnce();
  await target.reach(events * 3, 5_000, 300_000);
  const drained = (performance.now() - started) / 1000;
  await server.stop();
  await new Promise((r) => setTimeout(r, 1_500));
  const after = await counts(admin, name);
  const endLsn = (await admin.query('select pg_current_wal_lsn() as lsn')).rows[0].lsn as string;
  console.log(`WAL from ${startLsn} to ${endLsn} (pg_waldump --stats=record -s ${startLsn} -e ${endLsn})`);
  const per = (key: keyof typeof before) => (after[key] - before[key]) / events;
  console.log(
    JSON.stringify(
      {
        events,
        failed: answered.failed,
        delivered: target.delivered(),
        'drained in s': Number(drained.toFixed(1)),
        'matches updates/event': per('upd'),
        'of them HOT/event': per('hot'),
        'WAL records/event': per('walRecords'),
        'WAL bytes/event': per('walBytes'),
        'WAL full-page images/event': per('fpi'),
        'commits/event': per('commits'),
      },
      null,
      1,
    ),
  );
  // Statements grouped by their first words (an IN list's every length is a statement of its own there).
  const statements = await admin
    .query(
      `select sum(calls)::bigint as calls, sum(rows)::bigint as rows, sum(wal_bytes)::bigint as wal, k as query from (
         select calls, rows, wal_bytes, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) as k
         from pg_stat_statements where dbid = (select oid from pg_database where datname = $1)) s
       group by k order by sum(wal_bytes) desc limit 14`,
      [name],
    )
    .catch((error: unknown) => (console.error(error), { rows: [] }));
  for (const s of statements.rows as Array<{ calls: string; rows: string; wal: string; query: string }>)
    console.log(
      `${(Number(s.calls) / events).toFixed(3)} calls/ev ${(Number(s.rows) / events).toFixed(2)} rows/ev ${(Number(s.wal) / events).toFixed(0)} WAL B/ev  ${s.query}`,
    );
} finally {
  await server.stop();
  await target.close();
  await policy.close();
  await admin.end();
}

async function counts(client: pg.Client, database: string) {
  await client.query('select pg_stat_clear_snapshot()');
  // pg_stat_user_tables is per database: read it there.
  const there = new pg.Client(Object.assign(new URL(adminUrl), { pathname: `/${database}` }).toString());
  await there.connect();
  const m = await there.query(`select n_tup_upd as upd, n_tup_hot_upd as hot from pg_stat_user_tables where relname = 'matches'`);
  await there.end();
  const wal = await client.query(`select wal_records, wal_bytes, wal_fpi from pg_stat_wal`);
  const db = await client.query(`select xact_commit from pg_stat_database where datname = $1`, [database]);
  return {
    upd: Number(m.rows[0].upd),
    hot: Number(m.rows[0].hot),
    walRecords: Number(wal.rows[0].wal_records),
    walBytes: Number(wal.rows[0].wal_bytes),
    fpi: Number(wal.rows[0].wal_fpi),
    commits: Number(db.rows[0].xact_commit),
  };
}
