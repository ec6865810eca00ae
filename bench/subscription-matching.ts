/**
 * Matching time per event at 1,000 to 1,000,000 subscriptions of the facility's shapes, with
 * the index and by evaluating every subscription, and the memory both take. As in the server,
 * subscriptions with the same expression share its compiled form (at 1,000,000 there are
 * about 150,000 distinct expressions). Matching is timed as the index answers, in groups
 * (`matchGroups`) with every match read, and as one array (`match`, what the live matcher hands
 * to /receive).
 */
import { type CompiledJsonPath, compileJsonPath } from '../src/jsonpath/index.js';
import { SubscriptionIndex } from '../src/matching/subscription-index.js';
import { Random } from '../test/support/random.js';
import { ingestEvent, subscriptionExpression } from './facility-workload.js';
import { MB, mean, percentile, settledHeapBytes, timings } from './measure.js';
import type { Row } from './table.js';

const EVENTS_WITH_INDEX = 2_000;
/** Evaluating everything at 100,000 subscriptions takes ~0.25 s an event: fewer events do (at least 5). */
const FULL_EVALUATION_BUDGET = 2_000_000;

export function benchMatching(sizes: readonly number[]): Row[] {
  return sizes.map((size) => benchSize(size));
}

function benchSize(size: number): Row {
  const r = new Random(size);
  const events = Array.from({ length: EVENTS_WITH_INDEX }, (_, i) => ingestEvent(r, i));
  const heapBefore = settledHeapBytes();

  const compileStart = performance.now();
  const distinct = new Map<string, CompiledJsonPath>();
  const compiled: CompiledJsonPath[] = [];
  for (let i = 0; i < size; i++) {
    const source = subscriptionExpression(r);
    let c = distinct.get(source);
    if (!c) distinct.set(source, (c = compileJsonPath(source)));
    compiled.push(c);
  }
  const compileMs = performance.now() - compileStart;
  const heapCompiled = settledHeapBytes();

  const indexStart = performance.now();
  const index = new SubscriptionIndex<number>();
  for (const [id, c] of compiled.entries()) index.set(id, c);
  const indexMs = performance.now() - indexStart;
  const heapIndexed = settledHeapBytes();

  let matches = 0;
  // A server matches for days: measure it warmed up (compiled by the JIT), as it runs then.
  for (const event of events) countEach(index.matchGroups(event));
  for (const event of events) index.match(event);
  const before = index.stats();
  // Each match is read, as a caller reads them.
  const indexed = timings(events, (event) => (matches += countEach(index.matchGroups(event))));
  const after = index.stats();
  const oneArray = timings(events, (event) => index.match(event));

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
    expressions: distinct.size,
    'unindexed exprs': index.stats().unindexed,
    'evaluated/event': (after.evaluations - before.evaluations) / (after.lookups - before.lookups),
    'matches/event': matches / events.length,
    'index µs mean': mean(indexed),
    'index µs p99': percentile(indexed, 99),
    'as one array µs mean': mean(oneArray),
    'all-eval µs mean': mean(full),
    speed_up: mean(full) / mean(indexed),
    'compiled MB': (heapCompiled - heapBefore) / MB,
    'index MB': (heapIndexed - heapCompiled) / MB,
  };
}

/** How many matches the groups hold, reading every one. */
function countEach(groups: readonly (readonly number[])[]): number {
  let count = 0;
  for (const group of groups) for (const id of group) if (id >= 0) count++;
  return count;
}
