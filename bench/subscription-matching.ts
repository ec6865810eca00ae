/**
 * Matching time per event at 1,000, 10,000 and 100,000 subscriptions of the facility's shapes,
 * with the index and by evaluating every subscription, and the memory both take.
 */
import { type CompiledJsonPath, compileJsonPath } from '../src/jsonpath/index.js';
import { SubscriptionIndex } from '../src/matching/subscription-index.js';
import { Random } from '../test/support/random.js';
import { ingestEvent, subscriptionExpression } from './facility-workload.js';
import { MB, mean, percentile, settledHeapBytes, timings } from './measure.js';
import type { Row } from './table.js';

const EVENTS_WITH_INDEX = 2_000;
/** Evaluating everything at 100,000 subscriptions takes ~0.1 s an event: fewer events do. */
const FULL_EVALUATION_BUDGET = 2_000_000;

export function benchMatching(sizes: readonly number[]): Row[] {
  return sizes.map((size) => benchSize(size));
}

function benchSize(size: number): Row {
  const r = new Random(size);
  const events = Array.from({ length: EVENTS_WITH_INDEX }, (_, i) => ingestEvent(r, i));
  const heapBefore = settledHeapBytes();

  const compileStart = performance.now();
  const compiled: CompiledJsonPath[] = [];
  for (let i = 0; i < size; i++) compiled.push(compileJsonPath(subscriptionExpression(r)));
  const compileMs = performance.now() - compileStart;
  const heapCompiled = settledHeapBytes();

  const indexStart = performance.now();
  const index = new SubscriptionIndex<number>();
  for (const [id, c] of compiled.entries()) index.set(id, c);
  const indexMs = performance.now() - indexStart;
  const heapIndexed = settledHeapBytes();

  let matches = 0;
  // A server matches for days: measure it warmed up (compiled by the JIT), as it runs then.
  for (const event of events) index.match(event);
  const before = index.stats();
  const indexed = timings(events, (event) => (matches += index.match(event).length));
  const after = index.stats();

  const fullEvents = events.slice(0, Math.max(5, Math.min(events.length, Math.floor(FULL_EVALUATION_BUDGET / size))));
  let fullMatches = 0;
  let fullIndexMatches = 0;
  const full = timings(fullEvents, (event) => {
    for (const c of compiled) if (c.matches(event)) fullMatches++;
  });
  for (const event of fullEvents) fullIndexMatches += index.match(event).length;
  if (fullMatches !== fullIndexMatches) throw new Error(`index found ${fullIndexMatches} matches, full evaluation ${fullMatches}`);

  return {
    subscriptions: size,
    'compile ms': compileMs,
    'index build ms': indexMs,
    'unindexed exprs': index.stats().unindexed,
    'evaluated/event': (after.evaluations - before.evaluations) / (after.lookups - before.lookups),
    'matches/event': matches / events.length,
    'index µs mean': mean(indexed),
    'index µs p99': percentile(indexed, 99),
    'all-eval µs mean': mean(full),
    speed_up: mean(full) / mean(indexed),
    'compiled MB': (heapCompiled - heapBefore) / MB,
    'index MB': (heapIndexed - heapCompiled) / MB,
  };
}
