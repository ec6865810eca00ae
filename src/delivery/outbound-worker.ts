/**
 * The worker thread side of outbound-thread.ts: the target, broker and policy clients themselves
 * (one address guard for targets and brokers alike), fed batches of requests from the main thread and answering in batches.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { addressGuard } from '../net/address-guard.js';
import { NO_EGRESS_PROXY } from '../net/egress-proxy.js';
import { createPolicyClient } from '../policy/policy-client.js';
import { nameThisThread, OUTBOUND_THREAD_NAME } from '../thread-name.js';
import { batchPerTurn } from '../turn-batch.js';
import { createBrokerPublisher } from './broker-publisher.js';
import type { OutboundAnswer, OutboundOptions, OutboundRequest, ToWorker } from './outbound-thread.js';
import { createTargetClient } from './target-client.js';

const options = workerData as OutboundOptions;
nameThisThread(OUTBOUND_THREAD_NAME);
const port = parentPort!;
const guard = addressGuard(options.target.rules);
const egress = options.egress ?? NO_EGRESS_PROXY;
const target = createTargetClient({ ...options.target, guard, egress });
const broker = createBrokerPublisher({ timeoutMs: options.target.timeoutMs, guard });
const policy = options.policy && createPolicyClient({ ...options.policy, egress });

const answer = batchPerTurn<OutboundAnswer>((answers) => port.postMessage(answers));

async function run(request: OutboundRequest): Promise<OutboundAnswer['result']> {
  if (request.kind === 'post') return target.post(request.target);
  if (request.kind === 'publish') return broker.publish(request.broker);
  if (!policy) throw new Error('no policy service is configured');
  return policy.ask(request.user, request.event, request.traceparent);
}

port.on('message', (message: ToWorker) => {
  if (message === 'close') {
    void Promise.all([target.close(), broker.close(), policy?.close()]).then(() => port.postMessage('closed'));
    return;
  }
  for (const request of message) {
    run(request).then(
      (result) => answer({ id: request.id, result }),
      (error: unknown) => answer({ id: request.id, result: { failed: error instanceof Error ? error.message : String(error) } }),
    );
  }
});
