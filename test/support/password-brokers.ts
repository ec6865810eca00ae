/**
 * Brokers of a test's own that ask for a password: the machine's `nats-server` (JetStream on)
 * and `mosquitto` (no anonymous login, a password file made by `mosquitto_passwd`), each started
 * as a child process of the test on a free port of 127.0.0.1, with a fresh user name and
 * password, and killed when the test ends. The shared brokers run without passwords (nats.ts,
 * mosquitto.ts): a login's credentials can only be accepted or refused for real here. Where a
 * program is missing, the tests declared with its skip are reported as skipped with the reason.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { ask, type BrokerProbe } from './broker-available.js';
import { eventually } from './http-stub.js';
import { MQTT_HELLO } from './mosquitto.js';
import { freePort } from './processes.js';

export const NATS_SERVER = '/usr/sbin/nats-server';
export const MOSQUITTO = '/usr/sbin/mosquitto';
export const MOSQUITTO_PASSWD = '/usr/bin/mosquitto_passwd';

/** Why the tests that start a NATS server of their own cannot run here; false when they can. */
export const NATS_SERVER_SKIP: string | false = existsSync(NATS_SERVER)
  ? false
  : `${NATS_SERVER} is missing: Debian: apt-get install nats-server (.ci/run does)`;

/** Why the tests that start a Mosquitto of their own cannot run here; false when they can. */
export const MOSQUITTO_PROGRAMS_SKIP: string | false =
  [MOSQUITTO, MOSQUITTO_PASSWD]
    .filter((program) => !existsSync(program))
    .map((program) => `${program} is missing: Debian: apt-get install mosquitto (.ci/run does)`)
    .join('; ') || false;

/** A broker of the test's own, on 127.0.0.1:`port`, that takes only `username` and `password`. */
export interface PasswordBroker {
  readonly port: number;
  readonly username: string;
  readonly password: string;
  /** Runs `cleanup` (a client's of the test, which needs the broker) when the test ends, before the broker is stopped. */
  whenStopping(cleanup: () => Promise<void>): void;
}

/** A NATS server with JetStream (its store in a directory of its own) and one user. */
export function startNatsWithPassword(t: TestContext): Promise<PasswordBroker> {
  if (NATS_SERVER_SKIP) throw new Error(`${NATS_SERVER_SKIP}: declare the test with { skip: NATS_SERVER_SKIP }`);
  return startBroker(t, {
    name: 'nats-server',
    start: (dir, port, username, password) => ({
      command: NATS_SERVER,
      args: ['-a', '127.0.0.1', '-p', String(port), '--user', username, '--pass', password, '-js', '-sd', join(dir, 'store')],
    }),
    // It speaks first, with INFO: then it listens, and has its JetStream up.
    probe: (port) => ({ name: 'nats-server', port, answer: 'INFO ', provide: '' }),
  });
}

/** A Mosquitto with no anonymous login and one user in its password file; nothing persisted. */
export function startMosquittoWithPassword(t: TestContext): Promise<PasswordBroker> {
  if (MOSQUITTO_PROGRAMS_SKIP) throw new Error(`${MOSQUITTO_PROGRAMS_SKIP}: declare the test with { skip: MOSQUITTO_PROGRAMS_SKIP }`);
  return startBroker(t, {
    name: 'mosquitto',
    start: (dir, port, username, password) => {
      const passwords = join(dir, 'passwords');
      execFileSync(MOSQUITTO_PASSWD, ['-b', '-c', passwords, username, password], { stdio: 'pipe' });
      const config = join(dir, 'mosquitto.conf');
      writeFileSync(
        config,
        [
          `listener ${port} 127.0.0.1`,
          'allow_anonymous false',
          `password_file ${passwords}`,
          'persistence false',
          'log_dest stderr',
          '',
        ].join('\n'),
      );
      return { command: MOSQUITTO, args: ['-c', config] };
    },
    // Any CONNACK (this anonymous CONNECT's is a refusal): it listens.
    probe: (port) => ({ name: 'mosquitto', port, hello: MQTT_HELLO, answer: Buffer.from([0x20]), provide: '' }),
  });
}

interface BrokerProgram {
  name: string;
  /** The command that starts it in `dir` on `port`, after writing what it needs there. */
  start(dir: string, port: number, username: string, password: string): { command: string; args: string[] };
  /** How to tell that it answers on `port`. */
  probe(port: number): BrokerProbe;
}

/** Starts the program on a free port (another, up to three times, when it exits first: the port was taken meanwhile). */
async function startBroker(t: TestContext, program: BrokerProgram): Promise<PasswordBroker> {
  const username = `user-${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  // Readable by all: mosquitto started as root reads its files as the user `mosquitto`.
  const dir = mkdtempSync(join(tmpdir(), `notifications-${program.name}-`));
  chmodSync(dir, 0o755);
  let child: ChildProcess | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  t.after(async () => {
    try {
      for (const cleanup of cleanups.reverse()) await cleanup();
    } finally {
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    }
  });
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const { command, args } = program.start(dir, port, username, password);
    const started = spawn(command, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    let output = '';
    started.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.on('error', (error) => (output += `${error.message}\n`));
    const broker = {
      port,
      username,
      password,
      whenStopping: (cleanup: () => Promise<void>) => void cleanups.push(cleanup),
    };
    try {
      await eventually(
        async () => {
          if (started.exitCode !== null || started.signalCode !== null || started.pid === undefined)
            throw new ExitedEarly(`${program.name} exited:\n${output}`);
          return (await ask(program.probe(port))) === undefined;
        },
        `${program.name} answering on 127.0.0.1:${port}`,
        20_000,
      );
      return broker;
    } catch (error) {
      await stop(started);
      if (!(error instanceof ExitedEarly) || attempt === 3) throw error;
    }
  }
}

class ExitedEarly extends Error {}

/** Ends the process (SIGTERM, then SIGKILL if it lingers) and waits for its exit. */
async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
