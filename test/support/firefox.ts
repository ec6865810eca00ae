/**
 * Debian's Firefox ESR for the console's tests, driven over WebDriver BiDi, the W3C protocol it
 * speaks itself (playwright-core's Firefox needs a patched build that cannot be downloaded here,
 * and its BiDi channel asks this Firefox for commands it does not have). Only what the tests
 * use: open a page, run a script in it, take a screenshot, and collect what the page logs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'undici';

export const FIREFOX = '/usr/bin/firefox-esr';

/** Why the Firefox suite cannot run here; false when it can. */
export const FIREFOX_SKIP: string | false = existsSync(FIREFOX)
  ? false
  : `${FIREFOX} is missing: apt-get install firefox-esr (.ci/run does)`;

export interface LogEntry {
  level: string;
  text: string;
}

export interface Firefox {
  /** Opens `url` in the one tab and waits for it to load. */
  open(url: string): Promise<void>;
  /** The value of `expression` in the page (a promise is awaited); it must be JSON-serialisable. */
  evaluate<T>(expression: string): Promise<T>;
  /** A PNG of the viewport. */
  screenshot(): Promise<Buffer>;
  setViewport(width: number, height: number): Promise<void>;
  /** What the page has logged, CSP reports and errors included. */
  readonly logs: LogEntry[];
  close(): Promise<void>;
}

interface Message {
  id?: number;
  type: 'success' | 'error' | 'event';
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: string;
  message?: string;
}

const STARTUP_MS = 60_000;

export async function launchFirefox(): Promise<Firefox> {
  const profile = mkdtempSync(join(tmpdir(), 'console-firefox-'));
  const child = spawn(FIREFOX, ['--headless', '--no-remote', '--profile', profile, '--remote-debugging-port=0', 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, MOZ_CRASHREPORTER_DISABLE: '1' },
  });
  try {
    const socket = await connect(`${await bidiAddress(child)}/session`);
    return await session(socket, child, profile);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}

/** Firefox says where it listens on stderr: `WebDriver BiDi listening on ws://127.0.0.1:port`. */
function bidiAddress(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let said = '';
    const timer = setTimeout(() => reject(new Error(`Firefox did not start WebDriver BiDi in time: ${said}`)), STARTUP_MS);
    child.once('exit', (code) => reject(new Error(`Firefox exited with ${code}: ${said}`)));
    child.stderr!.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      const address = /WebDriver BiDi listening on (ws:\/\/\S+)/.exec(said)?.[1];
      if (address !== undefined) {
        clearTimeout(timer);
        resolve(address);
      }
    });
  });
}

function connect(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.onopen = () => resolve(socket);
    socket.onerror = () => reject(new Error(`cannot connect to Firefox at ${url}`));
  });
}

async function session(socket: WebSocket, child: ChildProcess, profile: string): Promise<Firefox> {
  const waiting = new Map<number, (message: Message) => void>();
  const logs: LogEntry[] = [];
  let next = 0;
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as Message;
    if (message.id !== undefined) waiting.get(message.id)?.(message);
    else if (message.method === 'log.entryAdded') {
      const entry = message.params as { level: string; text: string | null };
      logs.push({ level: entry.level, text: entry.text ?? '' });
    }
  };
  const send = (method: string, params: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++next;
      waiting.set(id, (message) => {
        waiting.delete(id);
        if (message.type === 'success') resolve(message.result ?? {});
        else reject(new Error(`${method}: ${message.error}: ${message.message}`));
      });
      socket.send(JSON.stringify({ id, method, params }));
    });

  await send('session.new', { capabilities: {} });
  await send('session.subscribe', { events: ['log.entryAdded'] });
  const tree = (await send('browsingContext.getTree', {})) as { contexts: Array<{ context: string }> };
  const context = tree.contexts[0]!.context;

  return {
    logs,
    async open(url) {
      await send('browsingContext.navigate', { context, url, wait: 'complete' });
    },
    async evaluate<T>(expression: string) {
      const result = (await send('script.evaluate', {
        expression: `(async () => JSON.stringify(await (${expression})))()`,
        target: { context },
        awaitPromise: true,
      })) as { type: string; result?: { value?: string }; exceptionDetails?: { text: string } };
      if (result.type !== 'success') throw new Error(`in Firefox: ${result.exceptionDetails?.text ?? 'an exception'}`);
      return JSON.parse(result.result?.value ?? 'null') as T;
    },
    async screenshot() {
      const { data } = (await send('browsingContext.captureScreenshot', { context })) as { data: string };
      return Buffer.from(data, 'base64');
    },
    async setViewport(width, height) {
      await send('browsingContext.setViewport', { context, viewport: { width, height } });
    },
    async close() {
      await send('browser.close', {}).catch(() => undefined);
      socket.close();
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
