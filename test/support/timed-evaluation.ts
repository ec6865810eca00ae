/**
 * Compiles and evaluates an expression in a worker thread and says how long that took. A
 * backtracking pattern holds a thread synchronously, where no test time-out can reach it: the
 * worker is terminated instead once `deadlineMs` has passed, and the promise rejects.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { JsonValue } from '../../src/json.js';
import { compileJsonPath } from '../../src/jsonpath/index.js';

interface Job {
  expression: string;
  document: JsonValue;
}

export interface TimedEvaluation {
  values: JsonValue[];
  ms: number;
}

export function evaluateInWorker(expression: string, document: JsonValue, deadlineMs: number): Promise<TimedEvaluation> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { expression, document } satisfies Job });
  return new Promise<TimedEvaluation>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${expression} was still evaluating after ${deadlineMs} ms`));
      void worker.terminate();
    }, deadlineMs);
    worker.once('message', (result: TimedEvaluation) => {
      clearTimeout(timer);
      resolve(result);
      void worker.terminate();
    });
    worker.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

if (!isMainThread) {
  const { expression, document } = workerData as Job;
  const start = performance.now();
  const { values } = compileJsonPath(expression, 'rfc9535').select(document);
  parentPort!.postMessage({ values, ms: performance.now() - start } satisfies TimedEvaluation);
}
