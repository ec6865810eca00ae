/**
 * match() and search() take time linear in the input, whatever the pattern. Each pattern here
 * takes a backtracking engine time exponential (or of degree 20) in the length of the string:
 * forty characters already hold it for minutes. Each evaluation runs in a worker that is
 * stopped after 20 s; it must finish in well under a second (a hang detector, not a
 * performance goal: a linear-time engine needs a few milliseconds).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluateInWorker } from '../support/timed-evaluation.js';

const HOSTILE = `${'a'.repeat(20_000)}!`;
const PROMPT_MS = 500;
const DEADLINE_MS = 20_000;

describe('match() and search() with catastrophic-backtracking patterns, over 20,001 characters', () => {
  // each filter, and a short string it does select (the long one it never does)
  const cases: Array<[string, string]> = [
    ["match(@, '(a+)+b')", 'aab'],
    ["match(@, '(a|a)*b')", 'ab'],
    ["match(@, '(a*)*b')", 'b'],
    ["match(@, '(.*a){20}')", 'a'.repeat(20)],
    ["match(@, '(a|aa)+b')", 'aaab'],
    ["search(@, '(a+)+b')", 'xaab'],
    ["search(@, '(a|a)*b')", 'b'],
    ["search(@, '(.*a){20}b')", `${'a'.repeat(20)}b`],
  ];
  for (const [filter, selected] of cases) {
    it(`${filter} in under ${PROMPT_MS} ms`, async () => {
      const { values, ms } = await evaluateInWorker(`$[?${filter}]`, [HOSTILE, selected], DEADLINE_MS);
      assert.deepEqual(values, [selected]);
      assert.ok(ms < PROMPT_MS, `took ${ms.toFixed(0)} ms`);
    });
  }

  it("a subscription testing the event id, as stored: $[?match($.id, '(a+)+b')]", async () => {
    const event = { specversion: '1.0', id: HOSTILE, source: '/s', type: 't' };
    const { values, ms } = await evaluateInWorker("$[?match($.id, '(a+)+b')]", event, DEADLINE_MS);
    assert.deepEqual(values, []);
    assert.ok(ms < PROMPT_MS, `took ${ms.toFixed(0)} ms`);
  });

  it('a pattern taken from the event itself: $[?search(@.s, @.p)]', async () => {
    const { values, ms } = await evaluateInWorker('$[?search(@.s, @.p)]', [{ s: HOSTILE, p: '(a|a)*b' }], DEADLINE_MS);
    assert.deepEqual(values, []);
    assert.ok(ms < PROMPT_MS, `took ${ms.toFixed(0)} ms`);
  });
});
