/**
 * An idle server stays idle: the built server, after delivering an event, sent nothing more and
 * with nobody asking it anything, over a quiet window.
 * - SQLite: nothing is committed (the data version another connection sees and the write-ahead
 *   log file stay as they were) and, where strace is installed, the log is never synced. Before,
 *   the runners' claims of an empty queue synced it once a second.
 * - PostgreSQL, through a proxy that reads the server's answers: a few commits and round trips,
 *   where the runners' claims, the subscription poll and the listener's probe made a commit a
 *   second and three round trips.
 * A quiet window is a window by nature: it is 30 s, thirty of the runners' old claim periods
 * (1 s), six of the old listening poll (5 s) and three of the listener's probe (10 s), so the
 * bounds stay far below what the old behaviour made in it even when a loaded machine delays
 * timers (which only ever makes fewer). The runners wait longer each quiet round (1, 2, 4, 8,
 * 16, then 30 s): over a window that starts 2 s after the last delivery, four rounds of claims
 * at most, each one or two commits, and one round of the retention purge (two statements) and
 * one subscription poll.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, POSTGRES, SQLITE } from '../support/database.js';
import { startDatabaseProxy } from '../support/database-proxy.js';
import { eventually, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const QUIET_MS = 30_000;
/** From the last delivery's settlement to the window's start. */
const SETTLE_MS = 2_000;

/** Creates a subscription to `target`, sends it an event, and waits until its delivery is recorded. */
async function deliverOne(server: RunningServer, url: string, target: string, delivered: () => Promise<boolean>): Promise<void> {
  const created = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
    body: JSON.stringify({ name: 'idle', jsonpath: "$[?$.source == '/idle']", target_url: target }),
  });
  assert.equal(created.status, 200, await created.text());
  const received = await fetch(`${server.url}/receive`, {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: JSON.stringify({ specversion: '1.0', id: 'idle-1', source: '/idle', type: 't' }),
  });
  assert.equal(received.status, 200);
  await eventually(delivered, `the event is delivered and recorded (${url})`);
}

/** Counts the server's fsync and fdatasync calls while `during` runs; undefined where strace cannot be run. */
async function syncsDuring(pid: number, during: () => Promise<void>): Promise<number | undefined> {
  const out = join(tmpdir(), `idle-strace-${pid}-${Date.now()}.txt`);
  const strace = spawn('strace', ['-f', '-c', '-e', 'trace=fsync,fdatasync', '-o', out, '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let said = '';
  strace.stderr.on('data', (d: Buffer) => (said += d.toString()));
  const exited = new Promise<number | null>((resolve) => {
    strace.on('error', () => resolve(null));
    strace.on('exit', (code) => resolve(code));
  });
  const attached = await Promise.race([
    (async () => {
      while (!said.includes('attached') && strace.exitCode === null) await sleep(20);
      return said.includes('attached');
    })(),
    exited.then(() => false),
  ]);
  if (!attached) {
    strace.kill();
    await during();
    return undefined;
  }
  await during();
  strace.kill('SIGINT');
  await exited;
  try {
    // The summary's last line: "100.00 … <calls> [errors] total"; no line when no call was made.
    const total = readFileSync(out, 'utf8')
      .split('\n')
      .find((line) => line.trim().endsWith('total'));
    return total === undefined ? 0 : Number(total.trim().split(/\s+/)[3]);
  } finally {
    rmSync(out, { force: true });
  }
}

describeOn(SQLITE, 'an idle server (sqlite)', () => {
  it('commits nothing and syncs nothing while nothing happens', async (t) => {
    const database = await syncedDatabase(SQLITE);
    const target = await startStub();
    const path = database.url.slice('sqlite:'.length);
    const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url });
    const reader = new Database(path, { readonly: true });
    try {
      const delivered = () =>
        reader.prepare(`select count(*) as n from matches where state = 'delivered'`).pluck().get() === 1 && target.requests.length === 1;
      await deliverOne(server, database.url, target.url, async () => delivered());
      await sleep(SETTLE_MS);
      const version = () => reader.pragma('data_version', { simple: true }) as number;
      const wal = () => {
        const { size, mtimeMs } = statSync(`${path}-wal`);
        return { size, mtimeMs };
      };
      const before = { version: version(), wal: wal() };
      const syncs = await syncsDuring(server.process.pid!, () => sleep(QUIET_MS));
      assert.equal(version(), before.version, 'no commit of the server changed the database');
      assert.deepEqual(wal(), before.wal, 'nothing was written to the write-ahead log');
      if (syncs === undefined) t.diagnostic('strace cannot run here: syncs not counted');
      else assert.equal(syncs, 0, 'the write-ahead log was not synced');
    } finally {
      reader.close();
      await server.stop();
      await target.close();
      await database.cleanup();
    }
  });
});

describeOn(POSTGRES, 'an idle server (postgres)', () => {
  it('commits and asks PostgreSQL seldom while nothing happens', async () => {
    const database = await syncedDatabase(POSTGRES);
    const target = await startStub();
    const proxy = await startDatabaseProxy(database.url);
    const server = await startServer({ NOTIFICATIONS_DATABASE_URL: proxy.url });
    const handle = openDatabase(database.url);
    try {
      const delivered = async () =>
        target.requests.length === 1 &&
        (await sql<{ n: number }>`select count(*)::int as n from matches where state = 'delivered'`.execute(handle.db)).rows[0]!.n === 1;
      await deliverOne(server, database.url, target.url, delivered);
      await sleep(SETTLE_MS);
      const before = proxy.answered();
      const connectionsBefore = proxy.accepted();
      await sleep(QUIET_MS);
      const after = proxy.answered();
      // The pool keeps its connections across the waits: PostgreSQL counts each start as a commit.
      assert.equal(proxy.accepted() - connectionsBefore, 0, 'connections opened in the quiet window');
      const commits = after.commits - before.commits;
      const roundTrips = after.roundTrips - before.roundTrips;
      // Before: a claim round (begin, two claims, commit) every second, a subscription poll every
      // 5 s and a probe every 10 s: about 36 commits and 100 round trips in 30 s.
      assert.ok(commits <= 12, `${commits} commits in ${QUIET_MS / 1000} s of quiet`);
      assert.ok(roundTrips <= 30, `${roundTrips} round trips in ${QUIET_MS / 1000} s of quiet`);
    } finally {
      await server.stop();
      await handle.close();
      await proxy.close();
      await target.close();
      await database.cleanup();
    }
  });
});
