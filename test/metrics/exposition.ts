/**
 * Reads the Prometheus text format back, strictly enough for the tests: every sample line is
 * `name{labels} value`, and a sample is looked up by its name and labels as printed.
 */
import assert from 'node:assert/strict';

export type Samples = Map<string, number>;

export function parseExposition(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

/** The sample named `name` with these labels (in the order prom-client prints them); undefined when absent. */
export function sample(samples: Samples, name: string, labels: Record<string, string> = {}): number | undefined {
  const printed = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  return samples.get(printed === '' ? name : `${name}{${printed}}`);
}

/** The `outcome`-labelled series of a counter, as an object: easy to compare whole. */
export function byOutcome(samples: Samples, name: string, outcomes: readonly string[]): Record<string, number | undefined> {
  return Object.fromEntries(outcomes.map((outcome) => [outcome, sample(samples, name, { outcome })]));
}

export const POLICY_OUTCOMES = ['allowed', 'denied', 'retry'] as const;
export const DELIVERY_OUTCOMES = ['delivered', 'retry', 'failed', 'cancelled'] as const;
export const OTHER_PROCESS_COMMITS_OUTCOMES = ['unchanged', 'added', 'reloaded'] as const;
