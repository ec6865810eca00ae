/**
 * SQLite's log, page by page: what each commit writes, by the table or index each page belongs
 * to. The counts workload (receive.ts: 999 subscriptions, three matching each event, targets
 * answering at once) at 300 events/s, for 2 s only, so that the log holds it all: it restarts
 * after a checkpoint (every 40 MB), and the frames read afterwards would be the last
 * checkpoint's only; the log is emptied (a checkpoint) before the load. It is read after the drain: each frame is one page, whole (its
 * number, and a commit's size on its last frame); the pages are named by SQLite's `dbstat`
 * table on a copy of the database. Pages a commit freed and a later one reused count for their
 * new owner.
 *
 * Pages per commit tell the schema's cost (an index whose keys land anywhere costs a page per
 * row; one appended to costs its last page, and its neighbours when that splits); commits per
 * event tell the batching, which moves with the machine: a busy one commits less often, and
 * each commit then carries more events.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startCountingTarget } from './counting-target.js';
import { COUNTS_RATE } from './counts.js';
import { createSubscriptions, MATCHES_PER_EVENT, pacedLoad } from './receive.js';
import { startBenchServer } from './server.js';
import type { Row } from './table.js';

export const WAL_SECONDS = 2;
const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
const DRAIN_QUIET_MS = 3_000;
const DRAIN_TIMEOUT_MS = 120_000;
/** After the last delivery: its outcome is committed, and synced (within SYNC_SOON_MS), well within this. */
const SETTLE_MS = 2_000;

interface Frame {
  page: number;
  /** Non-zero on a commit's last frame. */
  commit: number;
}

export async function benchWalPages(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-bench-wal-'));
  try {
    const file = join(dir, 'notifications.sqlite3');
    const { events, log } = await loggedRun(file, dir);
    const copy = join(dir, 'copy.sqlite3');
    copyFileSync(file, copy);
    copyFileSync(log, `${copy}-wal`);
    const database = new Database(copy, { readonly: true });
    try {
      const pageSize = database.pragma('page_size', { simple: true }) as number;
      const owners = new Map<number, string>();
      for (const { name, pageno } of database.prepare('select name, pageno from dbstat').all() as Array<{ name: string; pageno: number }>)
        owners.set(pageno, name);
      return pagesByOwner(framesOf(readFileSync(log), pageSize), owners, events, pageSize);
    } finally {
      database.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the workload on `file`, the log emptied first; a copy of the log after the drain. */
async function loggedRun(file: string, dir: string): Promise<{ events: number; log: string }> {
  const target = await startCountingTarget();
  const policy = await startCountingTarget();
  const server = await startBenchServer(`sqlite:${file}`, { NOTIFICATIONS_POLICY_URL: policy.url });
  try {
    await createSubscriptions(server, target.url);
    emptyLog(file);
    const load = await pacedLoad(`${server.url}/receive`, 'wal-pages', WAL_SECONDS, COUNTS_RATE);
    await target.reach(load.ok * MATCHES_PER_EVENT, DRAIN_QUIET_MS, DRAIN_TIMEOUT_MS);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const log = join(dir, 'after-wal');
    copyFileSync(`${file}-wal`, log);
    return { events: load.ok, log };
  } finally {
    await server.stop();
    await target.close();
    await policy.close();
  }
}

/** Copies the log into the database and empties it, while the server is idle. */
function emptyLog(file: string): void {
  const database = new Database(file);
  try {
    const [result] = database.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
    if (result?.busy !== 0) throw new Error('the log could not be emptied before the load: the server was writing');
  } finally {
    database.close();
  }
}

/**
 * The log's frames. Each carries the salt of the log's header when written, a new one each time
 * the log restarts after a checkpoint: a frame of another salt is an earlier round's.
 */
function framesOf(log: Buffer, pageSize: number): Frame[] {
  const frames: Frame[] = [];
  const salt = log.readUInt32BE(16);
  for (let at = WAL_HEADER_BYTES; at + FRAME_HEADER_BYTES + pageSize <= log.length; at += FRAME_HEADER_BYTES + pageSize) {
    if (log.readUInt32BE(at + 8) !== salt)
      throw new Error('the log was checkpointed during the run: it holds only what came after; run fewer events');
    frames.push({ page: log.readUInt32BE(at), commit: log.readUInt32BE(at + 4) });
  }
  return frames;
}

function pagesByOwner(frames: readonly Frame[], owners: ReadonlyMap<number, string>, events: number, pageSize: number): Row[] {
  const commits = frames.filter((frame) => frame.commit !== 0).length;
  const pages = new Map<string, number>();
  for (const { page } of frames) {
    const owner = owners.get(page) ?? '(free now)';
    pages.set(owner, (pages.get(owner) ?? 0) + 1);
  }
  const row = (owner: string, count: number): Row => ({
    'table or index': owner,
    'pages/event': count / events,
    'pages/commit': count / commits,
    'bytes/event': (count * (pageSize + FRAME_HEADER_BYTES)) / events,
  });
  return [
    ...[...pages].sort((a, b) => b[1] - a[1]).map(([owner, count]) => row(owner, count)),
    row(`all: ${events} events, ${commits} commits (${(commits / events).toFixed(2)} an event)`, frames.length),
  ];
}
