/**
 * The real built binaries, run as child processes: the CLI to completion, the server until
 * it says where it listens.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ROOT } from './project.js';

export const SERVER_BIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));
export const CLI_BIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

/** The server reads these as its egress proxy when NOTIFICATIONS_EGRESS_* are unset: a test sets them itself. */
const PROXY_VARIABLES = new Set(['http_proxy', 'https_proxy', 'no_proxy']);

/** The environment without the caller's NOTIFICATIONS_* settings, OpenTelemetry's OTEL_* and proxy variables, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!key.startsWith('NOTIFICATIONS_') && !key.startsWith('OTEL_') && !PROXY_VARIABLES.has(key.toLowerCase())) env[key] = value;
  return { ...env, ...extra };
}

export interface Finished {
  code: number | null;
  /** The signal that ended it, when one did (code is then null). */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: Record<string, string> = {}): Promise<Finished> {
  return run(CLI_BIN, args, env);
}

/** A built program of the project, run by this Node.js from the project root. */
export function run(bin: string, args: string[], env: Record<string, string> = {}, timeoutMs = 30_000): Promise<Finished> {
  return runCommand(process.execPath, [bin, ...args], { cwd: ROOT, env: cleanEnv(env), timeoutMs });
}

export interface CommandOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Killed, and the promise rejected, after this long. */
  timeoutMs?: number;
}

/** Any command, to its end, with what it printed. */
export function runCommand(command: string, args: string[], options: CommandOptions = {}): Promise<Finished> {
  const { cwd, env, timeoutMs = 30_000 } = options;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not finish in ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export interface RunningServer {
  readonly url: string;
  readonly process: ChildProcess;
  /** Everything it logged so far (JSON lines). */
  logs(): string;
  /** Sends SIGTERM and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * A port of 127.0.0.1 that refuses connections and that no test will take: one below the range
 * the kernel hands out to listen(0) (32768 and up by default), where nothing of this machine's
 * listens. A port freed by `freePort` can be handed to another test's server meanwhile: an
 * AMQP client meant to find nothing there once read an HTTP answer from it.
 */
export async function refusedPort(): Promise<number> {
  for (let port = 1; port < 1024; port++) if (await refuses(port)) return port;
  throw new Error('every port of 127.0.0.1 below 1024 answers or fails otherwise than refusing');
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/** A port nobody listens on right now (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts the server on a free port and resolves once /healthz answers. Another test may take
 * the port between the probe and the server's bind: then it starts again on another port.
 */
export async function startServer(env: Record<string, string>, options: ServerOptions = {}): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerOnce(env, options);
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === 3) throw error;
    }
  }
}

class PortTaken extends Error {}

export interface ServerOptions {
  timeoutMs?: number;
  /** Options for node itself, e.g. --cpu-prof (which NODE_OPTIONS refuses). */
  nodeArgs?: string[];
  /** An installed server program to run instead of the built one, found through `env.PATH`. */
  program?: string;
}

async function startServerOnce(
  env: Record<string, string>,
  { timeoutMs = 20_000, nodeArgs = [], program }: ServerOptions,
): Promise<RunningServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const [command, args] = program === undefined ? [process.execPath, [...nodeArgs, SERVER_BIN]] : [program, []];
  const child = spawn(command, args, {
    cwd: ROOT,
    env: cleanEnv({ NOTIFICATIONS_PORT: String(port), ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((done) =>
    child.on('exit', (code) => {
      exitCode = code;
      done(code);
    }),
  );
  const server: RunningServer = {
    url,
    process: child,
    logs: () => output,
    stop: (signal = 'SIGTERM') => {
      if (exitCode === undefined) child.kill(signal);
      return exited;
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exitCode !== undefined) {
      const Failure = output.includes('EADDRINUSE') ? PortTaken : Error;
      throw new Failure(`the server exited with ${exitCode} before listening:\n${output}`);
    }
    try {
      const health = await fetch(`${url}/healthz`);
      // Read to its end: an unread body keeps its connection open (and the test process alive).
      await health.arrayBuffer();
      if (health.ok) return server;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`the server did not start in ${timeoutMs} ms:\n${output}`);
}
