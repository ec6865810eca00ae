/**
 * The file writes and syncs of one process, counted by `perf trace` (Linux, root): every
 * pwrite64 (with its byte count and file), fdatasync and fsync the process's threads make.
 * SQLite writes its log and database with pwrite64 and syncs them with fdatasync (the server
 * syncs the log itself, in libuv's pool: wal-sync.ts), so the bytes written to the `-wal` file
 * are exactly the log's bytes (frames of a page and a 24-byte header, and the log's header).
 *
 * `perf trace` filters the system calls in the kernel: the server runs at its own pace, where
 * strace would stop it at every system call. It follows the threads the process has when it
 * starts (the server starts all of its own at start-up, libuv's pool at its first sync, which
 * is waited for); a thread started later would be
 * missed, and so would events perf reports lost: either makes the window an error, not a
 * smaller count. A window is between two marks: the bench writes a marker file with pwrite64
 * (of as many bytes as the mark's number), and the lines are split at the marks' kernel
 * timestamps once perf has stopped, so nothing depends on when its output arrives.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface SyscallWindow {
  /** fdatasync and fsync calls, on any file. */
  syncs: number;
  /** Bytes written with pwrite64, by the path of the file. */
  bytesByPath: ReadonlyMap<string, number>;
}

export interface SyscallTrace {
  /** Marks this moment; returns the mark to give `window`. */
  mark(): number;
  /** Stops perf (once; again does nothing); call before the process ends (its files are named from /proc). */
  stop(): Promise<void>;
  /** What the process did between two marks (after `stop`). */
  window(from: number, to: number): SyscallWindow;
}

interface Call {
  at: number;
  syscall: string;
  fd: number;
  bytes: number;
}

const READY_TIMEOUT_MS = 15_000;
const POOL_TIMEOUT_MS = 5_000;
/** How Node.js names the threads of libuv's pool. */
const LIBUV_POOL_THREAD = 'libuv-worker';
/** perf's buffer per CPU (its default is 512 KB): room for a loaded server's calls on a busy machine. */
const PERF_BUFFER_PAGES = '16M';
const LOST = /LOST (\d+) events/;
const LINE = /^\s*([\d.]+) \([^)]*\): .*\/(\d+) (pwrite64|fdatasync|fsync)\(fd: (\d+)(?:, buf: \w+, count: (\d+))?/;

/**
 * Until libuv's pool has started in `pid`: at the log's first sync, up to SYNC_SOON_MS after the
 * first claim of a server just started. Without it, after POOL_TIMEOUT_MS (`window` then says
 * which threads came later).
 */
async function poolStarted(pid: number): Promise<void> {
  const deadline = performance.now() + POOL_TIMEOUT_MS;
  const names = () => readdirSync(`/proc/${pid}/task`).map((tid) => readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim());
  while (!names().includes(LIBUV_POOL_THREAD) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** Starts tracing `pid`; rejects with a reason when perf cannot trace here. */
export async function startSyscallTrace(pid: number): Promise<SyscallTrace> {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-bench-marker-'));
  const marker = openSync(join(dir, 'marker'), 'w');
  const threads = () => new Set(readdirSync(`/proc/${pid}/task`));
  await poolStarted(pid);
  const traced = threads();
  const perf = spawn('perf', ['trace', '-p', `${pid},${process.pid}`, '-m', PERF_BUFFER_PAGES, '-e', 'pwrite64,fdatasync,fsync'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => perf.once('close', () => resolve()));
  let failure: Error | undefined;
  perf.once('error', (error) => (failure = error));
  const calls: Call[] = [];
  const marks = new Map<number, number>();
  let lost = 0;
  let untraced: string[] = [];
  createInterface({ input: perf.stderr }).on('line', (line) => {
    const m = LINE.exec(line);
    if (!m) {
      const dropped = LOST.exec(line);
      if (dropped) lost += Number(dropped[1]);
      return;
    }
    const [at, tid, syscall, fd, count] = [Number(m[1]), Number(m[2]), m[3]!, Number(m[4]), Number(m[5] ?? 0)];
    if (tid === process.pid && fd === marker && syscall === 'pwrite64') marks.set(count, at);
    else if (tid !== process.pid) calls.push({ at, syscall, fd, bytes: syscall === 'pwrite64' ? count : 0 });
  });
  let next = 1;
  const mark = () => {
    const id = next++;
    // With a position, one pwrite64 of `id` bytes from this thread.
    writeSync(marker, Buffer.alloc(id), 0, id, 0);
    return id;
  };
  const cleanup = () => {
    closeSync(marker);
    rmSync(dir, { recursive: true, force: true });
  };
  // Ready once perf reports a mark.
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (marks.size === 0 && !failure && perf.exitCode === null && performance.now() < deadline) {
    mark();
    await new Promise((r) => setTimeout(r, 100));
  }
  if (marks.size === 0) {
    perf.kill('SIGINT');
    cleanup();
    throw new Error(failure ? `perf missing (${failure.message})` : 'perf trace reported nothing (it needs root or CAP_PERFMON)');
  }
  const paths = new Map<number, string>();
  return {
    mark,
    stop: async () => {
      if (perf.exitCode !== null || perf.signalCode !== null) return;
      untraced = [...threads()].filter((tid) => !traced.has(tid));
      for (const call of calls) {
        if (paths.has(call.fd)) continue;
        try {
          paths.set(call.fd, readlinkSync(`/proc/${pid}/fd/${call.fd}`));
        } catch {
          paths.set(call.fd, `fd ${call.fd}`);
        }
      }
      perf.kill('SIGINT');
      await exited;
      cleanup();
    },
    window: (from, to) => {
      const [start, end] = [marks.get(from), marks.get(to)];
      if (lost > 0) throw new Error(`perf trace lost ${lost} events`);
      if (untraced.length > 0) throw new Error(`threads started after perf trace: ${untraced.join(', ')}`);
      if (start === undefined || end === undefined) throw new Error(`perf trace lost the marks ${from}–${to}`);
      const bytesByPath = new Map<string, number>();
      let syncs = 0;
      for (const call of calls) {
        if (call.at <= start || call.at >= end) continue;
        if (call.syscall === 'pwrite64') {
          const path = paths.get(call.fd) ?? `fd ${call.fd}`;
          bytesByPath.set(path, (bytesByPath.get(path) ?? 0) + call.bytes);
        } else syncs++;
      }
      return { syncs, bytesByPath };
    },
  };
}
