/** Timing and memory helpers for the benchmarks: plain numbers, no framework. */

/** Calls `fn` in growing batches until `minMs` have passed; returns calls per second. */
export function opsPerSecond(fn: () => unknown, minMs = 400): number {
  let batch = 1;
  let calls = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minMs) {
    for (let i = 0; i < batch; i++) fn();
    calls += batch;
    batch *= 2;
    elapsed = performance.now() - start;
  }
  return (calls / elapsed) * 1000;
}

/** Runs `fn` once per input and returns the time of each call in microseconds. */
export function timings<T>(inputs: readonly T[], fn: (input: T) => unknown): number[] {
  const out: number[] = [];
  for (const input of inputs) {
    const start = performance.now();
    fn(input);
    out.push((performance.now() - start) * 1000);
  }
  return out;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** Heap in use after a full collection (run node with --expose-gc for it to mean anything). */
export function settledHeapBytes(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return process.memoryUsage().heapUsed;
}

export const MB = 1024 * 1024;
