/**
 * Whether a shared broker answers here, asked once per test file (its support module awaits it
 * when the file loads): where none answers, the tests that need it are reported as skipped with
 * the reason, naming the broker, where it was asked and how to provide it, as every other
 * missing tool is. The question is the protocol's first exchange, not only a TCP connect, so
 * that something else on the port is not taken for the broker.
 */
import { connect } from 'node:net';

export interface BrokerProbe {
  /** The broker as the reason names it. */
  readonly name: string;
  readonly host?: string;
  readonly port: number;
  /** What the client says first, for a protocol in which the client speaks first. */
  readonly hello?: Uint8Array | string;
  /** How the broker's answer begins. */
  readonly answer: Uint8Array | string;
  /** How to provide it, e.g. "apt-get install redis-server; redis-server --daemonize yes". */
  readonly provide: string;
  readonly timeoutMs?: number;
}

/** Why the tests that need the broker cannot run here; false when it answers as it should. */
export async function brokerSkip(probe: BrokerProbe): Promise<string | false> {
  const { name, host = '127.0.0.1', port, provide } = probe;
  const failure = await ask(probe);
  return failure === undefined ? false : `${name} is not answering on ${host}:${port} (${failure}): Debian: ${provide} (.ci/run does)`;
}

/** What went wrong asking the broker; undefined when its answer begins as it should. */
export function ask({ name, host = '127.0.0.1', port, hello, answer, timeoutMs = 2_000 }: BrokerProbe): Promise<string | undefined> {
  const expected = Buffer.from(answer);
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    const socket = connect({ host, port });
    // The first outcome counts: destroying the socket reports its close as well.
    const done = (failure?: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(failure);
    };
    const timer = setTimeout(() => done(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket.on('connect', () => {
      if (hello !== undefined) socket.write(hello);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < expected.length) return;
      const begins = received.subarray(0, expected.length);
      done(
        begins.equals(expected)
          ? undefined
          : `it answered ${JSON.stringify(received.subarray(0, 40).toString('latin1'))}, not as ${name} does`,
      );
    });
    socket.on('error', (error: NodeJS.ErrnoException) => done(error.code === 'ECONNREFUSED' ? 'connection refused' : error.message));
    socket.on('close', () => done('it closed the connection without an answer'));
  });
}

/** For a support module to refuse, with the reason, a test that needs its broker and was not declared with its skip. */
export function mustAnswer(skip: string | false, variable: string): void {
  if (skip) throw new Error(`${skip}: declare the test with { skip: ${variable} }`);
}
