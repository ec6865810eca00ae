import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileJsonPath, type DialectMode } from '../../src/jsonpath/index.js';
import { SubscriptionIndex } from '../../src/matching/subscription-index.js';
import { facilityEvent } from '../support/fixtures.js';

function evaluationsFor(
  index: SubscriptionIndex<string>,
  event: Parameters<SubscriptionIndex<string>['match']>[0],
): { matched: string[]; evaluations: number } {
  const before = index.stats().evaluations;
  const matched = index.match(event);
  return { matched, evaluations: index.stats().evaluations - before };
}

describe('subscription index', () => {
  it('evaluates only the subscriptions whose constant the event holds', () => {
    const index = new SubscriptionIndex<string>();
    for (let i = 0; i < 1000; i++) {
      // Every expression names the same table; only the project value tells them apart.
      index.set(`s${i}`, compileJsonPath(`$.data[?@.destinationTable == 'Transactions.project' && @.value == '${i}'] `.trim()));
    }
    const { matched, evaluations } = evaluationsFor(index, {
      data: [{ destinationTable: 'Transactions.project', value: '17' }],
    });
    assert.deepEqual(matched, ['s17']);
    assert.ok(evaluations <= 2, `evaluated ${evaluations} expressions`);
  });

  it('files match() with a literal pattern, or `.*` and a literal, under the text it needs', () => {
    const index = new SubscriptionIndex<string>();
    const extensions = ['txt', 'csv', 'h5', 'tif', 'pdf', 'xls', 'png', 'raw', 'nc', 'json'];
    for (const extension of extensions) index.set(extension, compileJsonPath(`$.data[?match(@.name, '.*\\\\.${extension}')]`));
    index.set('exactly', compileJsonPath("$.data[?match(@.name, 'foo\\\\.txt')]"));
    index.set('any-pattern', compileJsonPath("$.data[?match(@.name, '.*\\\\.(txt|csv)')]"));
    const { matched, evaluations } = evaluationsFor(index, { data: [{ name: 'foo.txt' }, { name: 'b.h5' }, { name: 'c.txt.gz' }] });
    assert.deepEqual(matched.sort(), ['any-pattern', 'exactly', 'h5', 'txt']);
    // The literal ones are answered by the index alone; any-pattern, which only the member name
    // indexes, is evaluated.
    assert.equal(evaluations, 1);
    // I-Regexp's `.` matches no line break, so neither does `.*\\.csv`.
    assert.deepEqual(index.match({ data: [{ name: 'two\nlines.csv' }, { name: 'one\rline.txt' }] }), []);
  });

  it('takes an expression whose evaluation fails as no match, tells of it, and still answers for the others', () => {
    const told: Array<[string[], unknown]> = [];
    const index = new SubscriptionIndex<string>((subscribers, error) => told.push([[...subscribers], error]));
    // json-p3 refuses to descend more than 200 levels (events are refused beyond 100).
    index.set('descends', compileJsonPath('$[?@..x]', 'rfc9535'));
    index.set('top', compileJsonPath('$.a', 'rfc9535'));
    let deep: Record<string, unknown> = { x: 1 };
    for (let i = 0; i < 250; i++) deep = { a: deep };
    assert.deepEqual(index.match(deep as Parameters<SubscriptionIndex<string>['match']>[0]), ['top']);
    assert.equal(index.stats().failures, 1);
    assert.deepEqual(
      told.map(([subscribers]) => subscribers),
      [['descends']],
    );
    assert.match(String(told[0]![1]), /recursion limit/);
  });

  it('evaluates an expression shared by many subscriptions once, and answers for all of them', () => {
    const index = new SubscriptionIndex<string>();
    for (let i = 0; i < 100; i++) index.set(`s${i}`, compileJsonPath("$.data[?@.mimetype == 'text/plain' && @.size > 100]"));
    const { matched, evaluations } = evaluationsFor(index, facilityEvent());
    assert.equal(matched.length, 100);
    assert.equal(evaluations, 1);
    assert.deepEqual(index.stats().expressions, 1);
  });

  it('answers expressions whose requirement is exact from the index alone, in both dialects', () => {
    const index = new SubscriptionIndex<string>();
    const exact: Array<[string, string, DialectMode]> = [
      ['plain', "$.data[?@.mimetype == 'text/plain']", 'rfc9535'],
      ['pdf', '$.data[*][?(@.mimetype = "application/pdf")]', 'jsonpath2'],
      ['small', '$.data[*][?(@.size < 50)]', 'jsonpath2'],
      ['ingest', "$[?@ == 'org.pacifica.metadata.ingest']", 'rfc9535'],
      ['extension', '$.extensions.comExampleExtension', 'auto'],
      ['hashed', '$..hashsum', 'auto'],
      // Members of one node, and conditions on the root joined by `and`.
      ['instrument', "$.data[?@.destinationTable == 'Transactions.instrument' && @.value == 54]", 'rfc9535'],
      ['crossed', "$.data[?@.destinationTable == 'Transactions.project' && @.value == 54]", 'rfc9535'],
      ['tag', '$.data[*][?(@.destinationTable = "TransactionKeyValue" and @.key = "Taggy" and @.value = "Blah")]', 'jsonpath2'],
      ['site', "$[?$.source == '/pacifica/metadata/ingest']", 'rfc9535'],
      [
        'instrument-text',
        "$[?$.data[?@.destinationTable == 'Transactions.instrument' && @.value == 54] && $.data[?@.mimetype == 'text/plain']]",
        'rfc9535',
      ],
      [
        'instrument-over-100',
        '$[?($.data[*][?(@.destinationTable = "Transactions.instrument" and @.value = 54)] and $.data[*][?(@.size > 100)])]',
        'jsonpath2',
      ],
      [
        'instrument-over-1000',
        '$[?($.data[*][?(@.destinationTable = "Transactions.instrument" and @.value = 54)] and $.data[*][?(@.size > 1000)])]',
        'jsonpath2',
      ],
    ];
    for (const [id, expression, mode] of exact) {
      const compiled = compileJsonPath(expression, mode);
      assert.equal(compiled.exact, true, expression);
      index.set(id, compiled);
    }
    const { matched, evaluations } = evaluationsFor(index, facilityEvent());
    assert.deepEqual(matched.sort(), [
      'extension',
      'hashed',
      'ingest',
      'instrument',
      'instrument-over-100',
      'instrument-text',
      'plain',
      'site',
      'small',
      'tag',
    ]);
    assert.equal(evaluations, 0);
    for (const [expression, mode] of [
      ["$.data[?@.mimetype != 'x']", 'rfc9535'],
      ['$.data[?@.a == 1 && @.b > 2]', 'rfc9535'],
      ['$.data[?@.a == 1 || @.b == 2]', 'rfc9535'],
      ["$.data[?$.a == 1 && @.b == 'x']", 'rfc9535'],
      ['$.data[?@.a].b', 'rfc9535'],
      ['$.data[1:3]', 'rfc9535'],
      ['$.data[*][?(@.a = 1 and @.b > 2)]', 'jsonpath2'],
      ['$[?($.a = 1 or $.b = 2)]', 'jsonpath2'],
    ] as const) {
      assert.equal(compileJsonPath(expression, mode).exact, false, expression);
    }
  });

  it('evaluates unindexable expressions for every event', () => {
    const index = new SubscriptionIndex<string>();
    index.set('root', compileJsonPath('$'));
    // jsonpath2 filters test the root itself here, and `not` promises nothing.
    index.set('negated', compileJsonPath('$[?(not @.missing)]', 'jsonpath2'));
    // Indexable after all: `..` needs a member `name` somewhere; `!` and match() a member of the root.
    index.set('deep', compileJsonPath('$..name'));
    index.set('negated-member', compileJsonPath('$[?!@.missing]'));
    index.set('function', compileJsonPath("$[?match($.eventType, 'org\\\\..*')]"));
    assert.equal(index.stats().unindexed, 2);
    assert.deepEqual(index.match(facilityEvent()).sort(), ['deep', 'function', 'negated', 'negated-member', 'root']);
    assert.deepEqual(index.match({}).sort(), ['negated', 'root']);
  });

  it('replaces and deletes subscriptions', () => {
    const index = new SubscriptionIndex<string>();
    index.set('a', compileJsonPath("$[?$.eventType == 'org.pacifica.metadata.ingest']"));
    index.set('b', compileJsonPath("$[?$.eventType == 'other']"));
    assert.deepEqual(index.match(facilityEvent()), ['a']);
    index.set('b', compileJsonPath("$[?$.eventType == 'org.pacifica.metadata.ingest']"));
    assert.deepEqual(index.match(facilityEvent()).sort(), ['a', 'b']);
    assert.equal(index.stats().expressions, 1);
    assert.equal(index.delete('a'), true);
    assert.equal(index.delete('a'), false);
    assert.deepEqual(index.match(facilityEvent()), ['b']);
    index.delete('b');
    assert.deepEqual(index.stats().expressions, 0);
    assert.deepEqual(index.match(facilityEvent()), []);
  });

  it('treats members named like Object.prototype properties as data', () => {
    const index = new SubscriptionIndex<string>();
    index.set('proto', compileJsonPath("$['__proto__'].x"));
    index.set('ctor', compileJsonPath("$[?@.constructor == 'x']"));
    assert.deepEqual(index.match(JSON.parse('{"__proto__": {"x": 1}}')), ['proto']);
    assert.deepEqual(index.match({ a: { constructor: 'x' } }), ['ctor']);
    assert.deepEqual(index.match({ a: {} }), []);
  });
});

describe('subscription index, numeric comparisons', () => {
  it('evaluates only the expressions whose bound the event passes', () => {
    const index = new SubscriptionIndex<string>();
    // `&& @.name` keeps them from being exact, so what the index hands over is evaluated.
    for (let gb = 1; gb <= 100; gb++) index.set(`over-${gb}gb`, compileJsonPath(`$.data[?@.size > ${gb * 1e9} && @.name]`));
    index.set('at-most-5', compileJsonPath('$.data[*][?(5 >= @.size and @.name)]', 'jsonpath2'));
    index.set('below-5', compileJsonPath('$.data[?@.size < 5 && @.name]'));
    const event = {
      data: [
        { size: 2.5e9, name: 'a' },
        { size: 5, name: 'b' },
        { size: 'huge', name: 'c' },
      ],
    };
    const { matched, evaluations } = evaluationsFor(index, event);
    assert.deepEqual(matched.sort(), ['at-most-5', 'over-1gb', 'over-2gb']);
    assert.equal(evaluations, 3);
    index.delete('over-2gb');
    assert.deepEqual(index.match({ data: [{ size: 2.5e9, name: 'a' }] }), ['over-1gb']);
  });
});
