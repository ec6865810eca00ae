/**
 * CPU time spent during a measurement, read from /proc (Linux): by the server's main thread,
 * by all of the server's threads, by PostgreSQL's processes, and by the whole machine. Divided
 * by the events of the measurement it is what an event costs each of them, a figure that moves
 * far less between runs than a throughput does on a VM whose speed varies, and that says what
 * would bound the service on a machine of any size: one event-loop thread can do at most
 * 1,000 / (its ms per event) events a second, however many cores there are.
 */
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { OUTBOUND_THREAD_NAME, SQLITE_THREAD_NAME } from '../src/thread-name.js';
import type { Row } from './table.js';

/** Milliseconds of CPU (user and system) used so far. */
export interface CpuTimes {
  main: number;
  /** The server's SQLite thread (0 on PostgreSQL, which has none). */
  sqlite: number;
  /** The server's outbound thread: every exchange with targets, brokers and the policy service. */
  outbound: number;
  process: number;
  postgres: number;
  machine: number;
}

/** Kernel clock ticks a second (USER_HZ): 100 on every Linux architecture Node runs on. */
const TICKS_PER_SECOND = 100;
const MS_PER_TICK = 1000 / TICKS_PER_SECOND;

/**
 * Runs `run` and returns its result with the CPU each of its `events` cost while it ran, `pid`'s
 * threads, PostgreSQL's and the machine's. PostgreSQL's backends that ended meanwhile are not
 * counted.
 */
export async function measureCpu<T>(
  pid: number,
  run: () => Promise<T>,
  events: (result: T) => number,
): Promise<{ result: T; perEvent: CpuTimes }> {
  const before = cpuTimes(pid);
  const result = await run();
  const after = cpuTimes(pid);
  const count = events(result);
  const per = (key: keyof CpuTimes) => (count > 0 ? (after[key] - before[key]) / count : 0);
  return {
    result,
    perEvent: {
      main: per('main'),
      sqlite: per('sqlite'),
      outbound: per('outbound'),
      process: per('process'),
      postgres: per('postgres'),
      machine: per('machine'),
    },
  };
}

function cpuTimes(pid: number): CpuTimes {
  return {
    main: mainThreadMs(pid),
    sqlite: namedThreadMs(pid, SQLITE_THREAD_NAME),
    outbound: namedThreadMs(pid, OUTBOUND_THREAD_NAME),
    process: processMs(pid),
    postgres: postgresTicks() * MS_PER_TICK,
    machine: machineBusyTicks() * MS_PER_TICK,
  };
}

/** A row of the CPU table: `events` handled in `seconds`, and what each cost. */
export function cpuRow(load: string, database: string, events: number, seconds: number, perEvent: CpuTimes): Row {
  return {
    load,
    database,
    'events/s': events / seconds,
    'main thread ms/event': perEvent.main,
    'events/s one thread allows': 1000 / perEvent.main,
    'SQLite thread ms/event': database === 'sqlite' ? perEvent.sqlite : '–',
    'outbound thread ms/event': database === 'none' ? '–' : perEvent.outbound,
    'process ms/event': perEvent.process,
    'PostgreSQL ms/event': database === 'postgres' ? perEvent.postgres : '–',
    'machine ms/event': perEvent.machine,
    'machine busy': (perEvent.machine * events) / (os.cpus().length * seconds * 1000),
  };
}

/** utime + stime of a /proc stat file; 0 when the process has gone. */
function ticksOf(statPath: string): number {
  let stat: string;
  try {
    stat = readFileSync(statPath, 'utf8');
  } catch {
    return 0;
  }
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return Number(fields[11]) + Number(fields[12]);
}

/** CPU (ms, user and system) of all of `pid`'s threads so far; 0 once it has gone. */
export function processMs(pid: number): number {
  return ticksOf(`/proc/${pid}/stat`) * MS_PER_TICK;
}

/** CPU (ms, user and system) of `pid`'s main thread so far. */
export function mainThreadMs(pid: number): number {
  return ticksOf(`/proc/${pid}/task/${pid}/stat`) * MS_PER_TICK;
}

/** CPU (ms) of the threads of `pid` the service named `name` (thread-name.ts) so far. */
export function namedThreadMs(pid: number, name: string): number {
  return namedThreadTicks(pid, name) * MS_PER_TICK;
}

function namedThreadTicks(pid: number, name: string): number {
  let ticks = 0;
  let threads: string[];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const tid of threads) {
    try {
      if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() === name) ticks += ticksOf(`/proc/${pid}/task/${tid}/stat`);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ticks;
}

function postgresTicks(): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let comm: string;
    try {
      comm = readFileSync(`/proc/${entry}/comm`, 'utf8');
    } catch {
      continue;
    }
    if (comm.trim() === 'postgres') ticks += ticksOf(`/proc/${entry}/stat`);
  }
  return ticks;
}

/** All CPUs' busy ticks (user, nice, system, irq, softirq), from the first line of /proc/stat. */
function machineBusyTicks(): number {
  const [, user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  return user! + nice! + system! + irq! + softirq!;
}
