/**
 * Fails a test file that leaves a timer, server, socket or child process running after its
 * tests and hooks are over. Preloaded in every test process (scripts/run-tests.mjs passes
 * `--import` with this module; node's test runner hands it on to each file's process).
 *
 * Left running, such a thing keeps the file's process alive after its tests have passed, so
 * that the run waits for it (forever, without a per-file time-out), or it goes on working
 * under the next test. Here, once every test and every other `after` hook of the file has run,
 * the ref'ed handles (process.getActiveResourcesInfo) are compared with those there were when
 * the process started; what is left after a short grace fails the file with a message naming
 * each thing and where it was created, and the process is then ended so that the run goes on.
 *
 * What the check cannot see (a worker thread is not among the active resources) is caught by
 * a backstop: a process still alive WATCHDOG_MS after its tests fails with what is active.
 */
import { AsyncResource, createHook } from 'node:async_hooks';
import { after } from 'node:test';
import { setImmediate as immediate, setTimeout as timeout } from 'node:timers';

/** How long the handles left may take to close on their own (a socket closes a turn or two after its server). */
const GRACE_MS = 1_000;
/** Shorter in leak-guard.test.ts, which proves the backstop. */
const WATCHDOG_MS = Number(process.env.LEAK_GUARD_WATCHDOG_MS ?? 10_000);
/** Requests (a file read, a DNS look-up, a close) end by themselves: not leaks. */
const REQUEST = /Req/;

const counts = (types: string[]) => {
  const byType = new Map<string, number>();
  for (const type of types) if (!REQUEST.test(type)) byType.set(type, (byType.get(type) ?? 0) + 1);
  return byType;
};
// The process's own stdin, stdout and stderr are made on first use, which may come after the
// baseline (on Node 24, the first import of the module `node:process` reads every property of
// process): made now, they are part of it, not something a test left.
void process.stdin;
void process.stdout;
void process.stderr;
const baseline = counts(process.getActiveResourcesInfo());

/** What is active now beyond the baseline, e.g. "1 TCPServerWrap, 2 Timeout"; empty when nothing. */
function leftOver(): string {
  const extra: string[] = [];
  for (const [type, n] of counts(process.getActiveResourcesInfo())) {
    const more = n - (baseline.get(type) ?? 0);
    if (more > 0) extra.push(`${more} ${type}`);
  }
  return extra.join(', ');
}

/**
 * Where each live handle and timer was created, to name what was left. A stack is captured for
 * every resource but only formatted (the costly part) for a report. A handle often comes to be
 * in a callback whose stack shows none of the test (a listen on 127.0.0.1 creates its handle a
 * tick later): then it is named by what triggered it, and what triggered that.
 */
interface Created {
  type: string;
  resource: { hasRef?: () => boolean };
  /** Its own creation stack, then its trigger's, and so on. */
  chain: Array<{ stack?: string }>;
}
const created = new Map<number, Created>();
const TRACKED = new Set([
  'Timeout',
  'Immediate',
  'TCPSERVERWRAP',
  'TCPWRAP',
  'PIPEWRAP',
  'PIPESERVERWRAP',
  'PROCESSWRAP',
  'UDPWRAP',
  'SIGNALWRAP',
  'FSEVENTWRAP',
  'STATWATCHER',
]);
const origins = new Map<number, { holder: { stack?: string }; trigger: number }>();
/** Set while the guard makes its own timers: they are not leaks. */
let guardsOwn = false;

function init(asyncId: number, type: string, trigger: number, resource: object): void {
  if (type === 'PROMISE' || guardsOwn) return;
  const holder: { stack?: string } = {};
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 40; // past node's own frames (a server's are many) to the test's
  Error.captureStackTrace(holder, init);
  Error.stackTraceLimit = limit;
  origins.set(asyncId, { holder, trigger });
  if (!TRACKED.has(type)) return;
  const chain = [holder];
  for (let id = trigger, origin = origins.get(id); origin && chain.length < 8; id = origin.trigger, origin = origins.get(id))
    chain.push(origin.holder);
  created.set(asyncId, { type, resource: resource as Created['resource'], chain });
}
createHook({
  init,
  destroy: (asyncId) => {
    created.delete(asyncId);
    origins.delete(asyncId);
  },
}).enable();

function userFrames(stack = ''): string[] {
  return stack
    .split('\n')
    .slice(1)
    .map((line) => line.trim().replace(/^at /, ''))
    .filter((line) => !line.includes('node:') && !line.includes('node_modules/'));
}

/** The first frames of the code that created it (or what triggered it), not node's own. */
function site(chain: Created['chain']): string {
  for (const holder of chain) {
    const frames = userFrames(holder.stack);
    if (frames.length > 0) return frames.slice(0, 3).join(' < ');
  }
  return '(created by node itself)';
}

/** A socket's ends, e.g. " (127.0.0.1:41234 -> 127.0.0.1:5432)". */
function ends(resource: object): string {
  const socket = resource as { getsockname?: (out: object) => unknown; getpeername?: (out: object) => unknown };
  if (typeof socket.getsockname !== 'function') return '';
  const local: { address?: string; port?: number } = {};
  const peer: { address?: string; port?: number } = {};
  socket.getsockname(local);
  socket.getpeername?.(peer);
  return ` (${local.address}:${local.port}${peer.port ? ` -> ${peer.address}:${peer.port}` : ''})`;
}

function described(): string {
  const live = [...created.values()].filter((c) => c.resource.hasRef?.() ?? true);
  return live.map((c) => `\n  ${c.type}${ends(c.resource)} created at ${site(c.chain)}`).join('');
}

function own<T>(make: () => T): T {
  guardsOwn = true;
  try {
    return make();
  } finally {
    guardsOwn = false;
  }
}
const pause = (ms: number) => new Promise((resolve) => own(() => timeout(resolve, ms)));
const turn = () => new Promise((resolve) => own(() => immediate(resolve)));

async function check(): Promise<void> {
  const deadline = performance.now() + GRACE_MS;
  await turn();
  while (leftOver() !== '' && performance.now() < deadline) await pause(10);
  const left = leftOver();
  if (left === '') {
    timeout(() => {
      process.stderr.write(
        `leak guard: ${process.argv[1]}: the process is still running ${WATCHDOG_MS} ms after its tests ended; active: ${process.getActiveResourcesInfo().join(', ')}${described()}\n`,
      );
      process.exit(1);
    }, WATCHDOG_MS).unref();
    return;
  }
  // The failure is reported (the root `after` hook failing fails the file); then the process
  // is ended, since what was left would keep it alive.
  process.exitCode = 1;
  timeout(() => process.exit(), 2_000).unref();
  throw new Error(`${process.argv[1]}: left running after the tests: ${left}${described()}`);
}

// Registered from the first `after` hook of the file (this module's, registered before the
// test file is loaded), the check comes last, after the file's own `after` hooks. `after`
// attaches to the test whose async context it is called in: this resource, made here outside
// any test, stands for the file itself.
const fileScope = new AsyncResource('leak-guard');
after(() => {
  fileScope.runInAsyncScope(() => after(check));
});
