/**
 * deploy/prometheus/alerts.yml: promtool accepts the rules and passes their unit tests
 * (alerts.test.yml beside them), each alert has what an alert needs and a test that fires it and
 * one where it must not; and every series the rules select (metric name and label values) is in
 * a running server's /metrics, so the rules cannot drift from the code. The promtool suite is
 * skipped, with why, without promtool.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { describeOn, testBackends } from '../support/database.js';
import { runCommand } from '../support/processes.js';
import { skipUnless } from '../support/project.js';
import { serverOn } from '../support/server-on.js';

const RULES = fileURLToPath(new URL('../../../deploy/prometheus/alerts.yml', import.meta.url));
const RULE_TESTS = fileURLToPath(new URL('../../../deploy/prometheus/alerts.test.yml', import.meta.url));
const PROMTOOL_SKIP = skipUnless('promtool', ['--version'], 'promtool is missing: apt-get install prometheus (.ci/run does)');

const rulesText = readFileSync(RULES, 'utf8');

interface AlertRule {
  name: string;
  /** The rule's text, from its `- alert:` line to the next rule's. */
  text: string;
  expr: string;
}

/** The alerting rules of the file, read as the file is written: one `- alert:` block each, `expr` inline or a block scalar. */
function alertRules(text: string): AlertRule[] {
  return text
    .split(/^\s*- alert: /m)
    .slice(1)
    .map((block) => {
      const name = block.split('\n', 1)[0]!.trim();
      const lines = block.split('\n');
      const at = lines.findIndex((line) => /^\s*expr:/.test(line));
      assert.ok(at >= 0, `${name} has an expr`);
      const [, indent, inline] = /^(\s*)expr:\s*(.*)$/.exec(lines[at]!)!;
      let expr = inline!;
      if (/^[|>][-+]?$/.test(expr)) {
        const body: string[] = [];
        for (const line of lines.slice(at + 1)) {
          if (line.trim() !== '' && line.search(/\S/) <= indent!.length) break;
          body.push(line);
        }
        expr = body.join('\n');
      }
      return { name, text: block, expr };
    });
}

interface Selector {
  metric: string;
  /** Label matchers that must match a series: `=` a value, or `=~` a plain alternation of values. */
  labels: Array<{ label: string; values: string[] }>;
}

const PROMQL_KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/** The series selectors of a PromQL expression: every name that is not a function, aggregation or keyword. */
function selectors(expr: string): Selector[] {
  const plain = expr.replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ').replace(/\[[^\]]*\]/g, ' ');
  const found: Selector[] = [];
  for (const [, metric, braces, call] of plain.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?(\s*\()?/g)) {
    if (call || PROMQL_KEYWORDS.has(metric!)) continue;
    const labels: Selector['labels'] = [];
    for (const [, label, op, value] of (braces ?? '').matchAll(/([a-zA-Z_]\w*)\s*(=~|!=|!~|=)\s*"([^"]*)"/g)) {
      if (op === '=') labels.push({ label: label!, values: [value!] });
      else if (op === '=~') {
        assert.match(value!, /^\w+(\|\w+)*$/, `${metric}: only plain alternations are checked against /metrics`);
        labels.push({ label: label!, values: value!.split('|') });
      }
    }
    found.push({ metric: metric!, labels });
  }
  return found;
}

/** Each sample of an exposition as its name and labels. */
function series(exposition: string): Array<{ name: string; labels: Map<string, string> }> {
  return exposition
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [, name, labels] = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line) ?? assert.fail(`not a sample line: ${line}`);
      return { name: name!, labels: new Map([...(labels ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => [k!, v!])) };
    });
}

const rules = alertRules(rulesText);

describe('the alert rules file', () => {
  it('the rules file holds the six alerts of the contract, each selecting at least one series', () => {
    assert.deepEqual(rules.map((rule) => rule.name).sort(), [
      'NotificationsDatabaseUnavailable',
      'NotificationsDeliveriesFailing',
      'NotificationsDeliveryQueueOld',
      'NotificationsPolicyQueueOld',
      'NotificationsStorageFull',
      'NotificationsTargetOriginDown',
    ]);
    for (const rule of rules) assert.ok(selectors(rule.expr).length > 0, `${rule.name}: no series found in ${rule.expr}`);
  });

  it('gives every alert a for: duration, a severity, a summary and a description', () => {
    for (const rule of rules) {
      assert.match(rule.text, /^\s+for: \d+[smh]$/m, `${rule.name}: for`);
      assert.match(rule.text, /^\s+severity: (critical|warning)$/m, `${rule.name}: severity`);
      assert.match(rule.text, /^\s+summary: \S/m, `${rule.name}: summary`);
      assert.match(rule.text, /^\s+description: \S/m, `${rule.name}: description`);
    }
  });

  it('has a unit test in which each alert fires, and one in which it must not', () => {
    const tests = readFileSync(RULE_TESTS, 'utf8');
    for (const { name } of rules) {
      assert.match(tests, new RegExp(`alertname: ${name}\\s+exp_alerts:\\s+- exp_labels:`), `${name} fires in a test`);
      assert.match(tests, new RegExp(`alertname: ${name},?\\s+exp_alerts: \\[\\]`), `${name} stays quiet in a test`);
    }
  });
});

describeOn({ skip: PROMTOOL_SKIP }, 'the alert rules, by promtool', () => {
  it('pass promtool check rules', async () => {
    const checked = await runCommand('promtool', ['check', 'rules', RULES]);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    assert.match(checked.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  it('pass their unit tests: promtool test rules alerts.test.yml', async () => {
    const tested = await runCommand('promtool', ['test', 'rules', RULE_TESTS], { cwd: dirname(RULE_TESTS) });
    assert.equal(tested.code, 0, tested.stdout + tested.stderr);
    assert.match(tested.stdout, /SUCCESS/);
  });
});

for (const backend of testBackends()) {
  describeOn(backend, `the series the alert rules select, in a running server's /metrics (${backend.name})`, () => {
    const server = serverOn(backend, { NOTIFICATIONS_LOG_LEVEL: 'warn' });

    it('are all there in a fresh instance, with every label value the rules ask for', async () => {
      const response = await fetch(`${server.url}/metrics`);
      assert.equal(response.status, 200);
      const scraped = series(await response.text());
      const missing: string[] = [];
      for (const rule of rules) {
        for (const { metric, labels } of selectors(rule.expr)) {
          const named = scraped.filter((s) => s.name === metric);
          if (named.length === 0) missing.push(`${rule.name}: ${metric}`);
          for (const { label, values } of named.length === 0 ? [] : labels) {
            for (const value of values) {
              if (!named.some((s) => s.labels.get(label) === value)) missing.push(`${rule.name}: ${metric}{${label}="${value}"}`);
            }
          }
        }
      }
      assert.deepEqual(missing, [], 'selected by the rules, not in /metrics');
    });
  });
}
