/**
 * Deliveries and policy calls, made from a worker thread. The server's main thread was full
 * (HTTP in, SQLite, the stages) while the machine's other core idled; about a quarter of the
 * main thread went to undici posting to targets and the policy service. Here the main thread
 * only hands over each exchange and takes back its answer, in batches (a message for all the
 * exchanges of one turn of the event loop), and the worker runs the same target and policy
 * clients as before. Publishes to message brokers (broker-publisher.ts) are made there too.
 *
 * The worker failing (a bug: the clients answer network problems, they do not throw) is
 * reported to `onFailure`; the server then exits, as it would had the same error been thrown
 * on its main thread, and the rows in flight go back to the queue when their leases expire.
 */
import { Worker } from 'node:worker_threads';
import type { AddressRules } from '../net/address-guard.js';
import type { EgressSettings } from '../net/egress-proxy.js';
import type { PolicyAnswer, PolicyClient, PolicyClientOptions } from '../policy/policy-client.js';
import { batchPerTurn } from '../turn-batch.js';
import type { BrokerAnswer, BrokerClient, BrokerRequest } from './broker-publisher.js';
import type { TargetClient, TargetClientOptions, TargetRequest, TargetResponse } from './target-client.js';

export interface OutboundOptions {
  /** The target client's options; its address guard is built in the worker from `rules`. */
  readonly target: Pick<TargetClientOptions, 'timeoutMs' | 'connectionsPerOrigin' | 'requestOrigin'> & { readonly rules: AddressRules };
  /** Absent: no policy service (allow-all). */
  readonly policy?: PolicyClientOptions;
  /** The egress proxy of deliveries to http(s) targets and of policy calls (not of brokers). */
  readonly egress?: EgressSettings;
}

type OutboundCall =
  | { kind: 'post'; target: TargetRequest }
  | { kind: 'ask'; user: string; event: string; traceparent?: string }
  | { kind: 'publish'; broker: BrokerRequest };
export type OutboundRequest = OutboundCall & { id: number };
export type ToWorker = OutboundRequest[] | 'close';
export interface OutboundAnswer {
  id: number;
  /** `failed`: the client threw (it was closed, or no policy service is configured). */
  result: TargetResponse | PolicyAnswer | BrokerAnswer | { failed: string };
}

export interface OutboundThread {
  readonly target: TargetClient;
  /** Publishes to message brokers (broker-publisher.ts). */
  readonly broker: BrokerClient;
  /** Undefined when no policy service is configured. */
  readonly policy: PolicyClient | undefined;
  /** Waits for the exchanges in flight, closes every connection, and ends the thread. */
  close(): Promise<void>;
}

export function startOutboundThread(options: OutboundOptions, onFailure: (error: Error) => void): OutboundThread {
  const worker = new Worker(new URL('./outbound-worker.js', import.meta.url), { workerData: options });
  const waiting = new Map<number, (result: OutboundAnswer['result']) => void>();
  const handOver = batchPerTurn<OutboundRequest>((requests) => worker.postMessage(requests satisfies ToWorker));
  let nextId = 0;
  let closing: Promise<void> | undefined;
  let closed: (() => void) | undefined;
  let failure: Error | undefined;
  let exited = false;

  worker.on('message', (message: OutboundAnswer[] | 'closed') => {
    if (message === 'closed') return closed?.();
    for (const { id, result } of message) {
      waiting.get(id)?.(result);
      waiting.delete(id);
    }
  });
  const failed = (error: Error) => {
    for (const settle of waiting.values()) settle({ failed: error.message });
    waiting.clear();
    // An 'error' is followed by an 'exit': reported once.
    if (!closing && !failure) onFailure((failure = error));
  };
  worker.on('error', (error) => failed(new Error(`the outbound HTTP thread failed: ${error.message}`, { cause: error })));
  worker.on('exit', (code) => {
    exited = true;
    closed?.();
    if (waiting.size > 0 || !closing) failed(new Error(`the outbound HTTP thread exited with ${code}`));
  });

  function exchange(call: OutboundCall): Promise<OutboundAnswer['result']> {
    if (closing || failure) return Promise.resolve({ failed: failure?.message ?? 'the outbound HTTP thread is closed' });
    return new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      handOver({ id, ...call });
    });
  }

  function close(): Promise<void> {
    closing ??= new Promise<void>((resolve) => {
      // A thread that has already ended (it failed) will answer no 'close'.
      if (exited) return resolve();
      closed = resolve;
      // After the exchanges already handed over: setImmediate runs in order.
      setImmediate(() => worker.postMessage('close' satisfies ToWorker));
    }).then(() => worker.terminate().then(() => undefined));
    return closing;
  }

  const target: TargetClient = {
    post: async (request) => {
      const result = await exchange({ kind: 'post', target: request });
      return 'failed' in result
        ? { status: null, error: result.failed, permanent: false, durationMs: 0, bodyExcerpt: '' }
        : (result as TargetResponse);
    },
    close,
  };
  const broker: BrokerClient = {
    publish: async (request) => {
      const result = await exchange({ kind: 'publish', broker: request });
      return 'failed' in result ? { error: result.failed, permanent: false, durationMs: 0 } : (result as BrokerAnswer);
    },
    close,
  };
  const policy: PolicyClient | undefined = options.policy && {
    ask: async (user, event, traceparent) => {
      const result = await exchange({ kind: 'ask', user, event, traceparent });
      return 'failed' in result ? { kind: 'retry', status: null, error: result.failed } : (result as PolicyAnswer);
    },
    close,
  };
  return { target, broker, policy, close };
}
