/**
 * The index must give exactly what evaluating every expression gives. Thousands of generated
 * expressions in both dialects, over generated events, compared subscription by subscription.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonValue } from '../../src/json.js';
import { type CompiledJsonPath, compileJsonPath, JsonPathSyntaxError } from '../../src/jsonpath/index.js';
import { holds } from '../../src/jsonpath/requirement.js';
import { SubscriptionIndex } from '../../src/matching/subscription-index.js';
import { Random } from '../support/random.js';
import { facilityEvent } from '../support/fixtures.js';

const TABLES = ['Files', 'Transactions.project', 'TransactionKeyValue', 'Transactions._id'];
const KEYS = ['Tag', 'Taggy', 'size'];
const VALUES: JsonValue[] = [
  'Blah',
  '1234',
  1234,
  1234.5,
  0,
  -1,
  true,
  false,
  null,
  'a/b/',
  '',
  'a.txt',
  'atxt',
  'two\nlines.txt',
  'x.tx',
  '.txt',
  'US$ 5',
];
/** match() patterns: literal ones (indexed by suffix or equality) and others. */
const PATTERNS = ['.*txt', '.*\\\\.txt', '.*\\\\.tx', 'a\\\\.txt', 'Blah', '.*', '.*\\\\$', '.*(txt|Blah)', '[ab].*', '.*a.*'];
const MEMBERS = ['destinationTable', 'key', 'value', 'name', 'size', 'missing'];

function literalRfc(r: Random): string {
  const v = r.pick(VALUES);
  return typeof v === 'string' && !v.includes('\n') ? `'${v}'` : JSON.stringify(v);
}

function literalJsonpath2(r: Random): string {
  return JSON.stringify(r.pick(VALUES));
}

function rfcFilter(r: Random, depth: number): string {
  const member = r.pick(MEMBERS);
  const choice = r.int(depth > 1 ? 8 : 11);
  switch (choice) {
    case 0:
      return `@.${member} == ${literalRfc(r)}`;
    case 1:
      return `${literalRfc(r)} == @.${member}`;
    case 2:
      return `@.${member} ${r.pick(['!=', '<', '<=', '>', '>='])} ${literalRfc(r)}`;
    case 3:
      return `@.${member}`;
    case 4:
      return `@.destinationTable == '${r.pick(TABLES)}'`;
    case 5:
      return `$.eventType == '${r.pick(['org.pacifica.metadata.ingest', 'other'])}'`;
    case 6:
      return `@.${member} ${r.pick(['==', '<', '<=', '!='])} @.${r.pick(MEMBERS)}`;
    case 7:
      return r.pick([`match(@.${r.pick(['name', 'value'])}, '${r.pick(PATTERNS)}')`, `length(@.value) > 3`, `!@.${member}`, `@[*]`]);
    case 8:
      return `${rfcFilter(r, depth + 1)} && ${rfcFilter(r, depth + 1)}`;
    case 9:
      return `${rfcFilter(r, depth + 1)} || ${rfcFilter(r, depth + 1)}`;
    default:
      return `!(${rfcFilter(r, depth + 1)})`;
  }
}

/** A condition on the root alone: a query from `$`, or a member of the root against a literal. */
function rfcRootCondition(r: Random): string {
  if (r.chance(0.1)) return r.pick(['$', `$ == ${literalRfc(r)}`]);
  return r.chance(0.7) ? `$.data[?${rfcFilter(r, 1)}]` : `$.${r.pick(['eventType', 'source', 'missing'])} == ${literalRfc(r)}`;
}

function rfcExpression(r: Random): string {
  switch (r.int(13)) {
    case 11:
      return `$[?${rfcRootCondition(r)} && ${rfcRootCondition(r)}]`;
    case 12:
      return `$[?${rfcRootCondition(r)}]`;
    case 9:
      return `$..${r.pick(['data', 'nested', '*'])}[?${rfcFilter(r, 1)}]`;
    case 10:
      return `$.data..${r.pick(MEMBERS)}`;
    case 0:
      return `$.data[?${rfcFilter(r, 0)}]`;
    case 1:
      return `$.data[?${rfcFilter(r, 0)}].${r.pick(MEMBERS)}`;
    case 2:
      return `$[?${rfcFilter(r, 0)}]`;
    case 3:
      return `$.data[${r.pick(['0', '-1', '*', '1:3', '::-2', "'x', 0", '5'])}].${r.pick(MEMBERS)}`;
    case 4:
      return `$..${r.pick(MEMBERS)}`;
    case 5:
      return `$.${r.pick(['eventType', 'source', 'extensions.comExampleExtension', 'nothing', 'data[0].value'])}`;
    case 6:
      return `data[?@.key == '${r.pick(KEYS)}' && @.value == ${literalRfc(r)}]`;
    case 7:
      return `$.data[?@.destinationTable == '${r.pick(TABLES)}' && @.value == ${literalRfc(r)}]`;
    default:
      return `$..[?${rfcFilter(r, 1)}]`;
  }
}

function jsonpath2Filter(r: Random, depth: number): string {
  const member = r.pick(MEMBERS);
  switch (r.int(depth > 1 ? 7 : 10)) {
    case 0:
      return `@.${member} = ${literalJsonpath2(r)}`;
    case 1:
      return `@.${member} ${r.pick(['!=', '<', '<=', '>', '>=', 'contains'])} ${literalJsonpath2(r)}`;
    case 2:
      return `@.${member}`;
    case 3:
      return `@.destinationTable = "${r.pick(TABLES)}"`;
    case 4:
      return `$.eventType = "org.pacifica.metadata.ingest"`;
    case 5:
      return `@.${member} = @.${r.pick(MEMBERS)}`;
    case 6:
      return r.pick([`@.name.length() > 5`, `@.value contains "la"`, `@.${member}.length() = 4`, '@.*']);
    case 7:
      return `${jsonpath2Filter(r, depth + 1)} and ${jsonpath2Filter(r, depth + 1)}`;
    case 8:
      return `${jsonpath2Filter(r, depth + 1)} or ${jsonpath2Filter(r, depth + 1)}`;
    default:
      return `not (${jsonpath2Filter(r, depth + 1)})`;
  }
}

function jsonpath2RootCondition(r: Random): string {
  return r.chance(0.7)
    ? `$.data[*][?(${jsonpath2Filter(r, 1)})]`
    : `$.${r.pick(['eventType', 'source', 'missing'])} = ${literalJsonpath2(r)}`;
}

function jsonpath2Expression(r: Random): string {
  switch (r.int(11)) {
    case 8:
      return `$[?(${jsonpath2RootCondition(r)} and ${jsonpath2RootCondition(r)})]`;
    case 9:
      return `$.extensions[?(${jsonpath2Filter(r, 1)} and ${jsonpath2RootCondition(r)})]`;
    case 10:
      return `$.data[*][?(@.destinationTable = "${r.pick(TABLES)}" and @.key = "${r.pick(KEYS)}" and @.value = ${literalJsonpath2(r)})]`;
    case 6:
      return `$..${r.pick(['nested', 'value', '*'])}[?(${jsonpath2Filter(r, 1)})]`;
    case 7:
      return `$.data..[?(@.${r.pick(MEMBERS)} = ${literalJsonpath2(r)})]`;
    case 0:
      return `$.data[*][?(${jsonpath2Filter(r, 0)})]`;
    case 1:
      return `$.data.*[?(${jsonpath2Filter(r, 0)})].${r.pick(MEMBERS)}`;
    case 2:
      return `$[?(${jsonpath2Filter(r, 0)})]`;
    case 3:
      return `$..[?(${jsonpath2Filter(r, 1)})]`;
    case 4:
      return `$.data[${r.pick(['0', '-1', '*', '1:3', '::-1', '"x",0'])}].${r.pick(MEMBERS)}`;
    default:
      return `$.data[*][?(@.key = "${r.pick(KEYS)}" and @.value = ${literalJsonpath2(r)})]`;
  }
}

function randomEvent(r: Random): JsonValue {
  const data: JsonValue[] = [];
  const items = r.int(6);
  for (let i = 0; i < items; i++) {
    const item: { [key: string]: JsonValue } = {};
    for (const member of MEMBERS) {
      if (!r.chance(0.6)) continue;
      item[member] = member === 'destinationTable' ? r.pick(TABLES) : member === 'key' ? r.pick(KEYS) : r.pick(VALUES);
    }
    if (r.chance(0.1)) item.nested = { value: r.pick(VALUES) };
    data.push(r.chance(0.05) ? r.pick(VALUES) : item);
  }
  const event: { [key: string]: JsonValue } = {
    eventType: r.pick(['org.pacifica.metadata.ingest', 'other']),
    source: '/pacifica/metadata/ingest',
    data: r.chance(0.05) ? {} : data,
  };
  if (r.chance(0.3)) event.extensions = { comExampleExtension: 'value' };
  return event;
}

function compileMany(r: Random, count: number): CompiledJsonPath[] {
  const compiled: CompiledJsonPath[] = [];
  while (compiled.length < count) {
    const text = r.chance(0.5) ? rfcExpression(r) : jsonpath2Expression(r);
    try {
      compiled.push(compileJsonPath(text, r.chance(0.5) ? 'auto' : 'jsonpath2-first'));
    } catch (error) {
      if (!(error instanceof JsonPathSyntaxError)) throw error;
      throw new Error(`the generator wrote an invalid expression: ${text}: ${error.message}`);
    }
  }
  return compiled;
}

describe('subscription index', () => {
  const seed = Number(process.env.TEST_SEED ?? 20261122);

  it(`matches exactly what full evaluation matches (seed ${seed})`, () => {
    const r = new Random(seed);
    const expressions = compileMany(r, 3000);
    const index = new SubscriptionIndex<number>();
    const live = new Map<number, CompiledJsonPath>();
    expressions.forEach((c, id) => {
      index.set(id, c);
      live.set(id, c);
    });
    // Deletes and replacements exercise the bookkeeping, and duplicates the sharing.
    for (let id = 0; id < expressions.length; id += 7) {
      index.delete(id);
      live.delete(id);
    }
    for (let id = 3; id < expressions.length; id += 11) {
      const other = expressions[r.int(expressions.length)]!;
      index.set(id, other);
      live.set(id, other);
    }
    const events = [facilityEvent(), ...Array.from({ length: 300 }, () => randomEvent(r))];
    let matchedSomething = 0;
    for (const event of events) {
      const expected = [...live]
        .filter(([, c]) => c.matches(event))
        .map(([id]) => id)
        .sort((a, b) => a - b);
      const actual = index.match(event).sort((a, b) => a - b);
      assert.deepEqual(actual, expected, `event ${JSON.stringify(event)}`);
      if (expected.length > 0) matchedSomething++;
    }
    assert.ok(matchedSomething > events.length / 2, 'the generated data should match often enough to test something');
    const stats = index.stats();
    assert.ok(stats.unindexed < stats.expressions / 2, `most expressions should be indexable: ${JSON.stringify(stats)}`);
  });

  it(`has exact requirements where it says so: met exactly when the expression matches (seed ${seed})`, () => {
    const r = new Random(seed + 2);
    const exact = compileMany(r, 3000).filter((c) => c.exact);
    const odd: JsonValue[] = [{}, [], { data: [] }, null, 0, 1234, 'Blah', true, [{ value: 'Blah', key: 'Tag' }]];
    const events = [facilityEvent(), ...odd, ...Array.from({ length: 200 }, () => randomEvent(r))];
    let matched = 0;
    for (const c of exact) {
      for (const event of events) {
        const matches = c.matches(event);
        assert.equal(holds(c.requirement, event), matches, `${c.expression} on ${JSON.stringify(event)}`);
        if (matches) matched++;
      }
    }
    assert.ok(exact.length > 500 && matched > 10_000, `${exact.length} exact expressions, ${matched} matches`);
  });

  it(`has sound requirements: whatever matches meets its requirement (seed ${seed})`, () => {
    const r = new Random(seed + 1);
    const expressions = compileMany(r, 2000);
    const events = Array.from({ length: 200 }, () => randomEvent(r));
    for (const c of expressions) {
      for (const event of events) {
        if (c.matches(event)) assert.ok(holds(c.requirement, event), `${c.expression} on ${JSON.stringify(event)}`);
      }
    }
  });
});
