import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { facilityEvent } from '../support/fixtures.js';
import type { JsonValue } from '../../src/json.js';
import { compileJsonPath2 } from '../../src/jsonpath/jsonpath2/index.js';
import { ALWAYS, compares, exists, holds, type PathStep, type Requirement, step } from '../../src/jsonpath/requirement.js';

const EVENT = facilityEvent();

/** `p('data', '*', '..', 0)`: names, `*` for any, `..` for descend, numbers for indices. */
const p = (...parts: (string | number)[]): PathStep[] =>
  parts.map((part) =>
    typeof part === 'number' ? step.index(part) : part === '*' ? step.any() : part === '..' ? step.descend() : step.name(part),
  );
const eq = (path: PathStep[], value: string | number | boolean | null): Requirement => ({ kind: 'equals', path, value });
const all = (...of: Requirement[]): Requirement => ({ kind: 'all', of });
const any = (...of: Requirement[]): Requirement => ({ kind: 'any', of });

const SHAPES: [string, Requirement][] = [
  ['$', ALWAYS],
  ['$.eventType', exists(p('eventType'))],
  ['$.data[*][?(@.destinationTable = "Files")]', eq(p('data', '*', 'destinationTable'), 'Files')],
  ['$.data.*[?(@.value="Blah")].value', eq(p('data', '*', 'value'), 'Blah')],
  ['$.data[*][?(@.size > 100)].name', all(compares(p('data', '*', 'size'), '>', 100), exists(p('data', '*', 'name')))],
  ['$.data[*][?(100 >= @.size)]', compares(p('data', '*', 'size'), '<=', 100)],
  ['$.data[*][?(@.name < "m")]', exists(p('data', '*', 'name'))],
  ['$.data[*][?(@.value = "Nam\\u00e9")]', eq(p('data', '*', 'value'), 'Nam\\u00e9')],
  ['$.data[*][?(@.value = 1234.0)]', eq(p('data', '*', 'value'), 1234)],
  ['$.a[?(@.b = true)]', eq(p('a', 'b'), true)],
  ['$.a[?(@.b = null)]', eq(p('a', 'b'), null)],
  ['$.a[?(1 = @.b)]', eq(p('a', 'b'), 1)],
  ['$.a[?(@.b = {"k": 1})]', exists(p('a', 'b'))],
  ['$.a[?(@.b = [1])]', exists(p('a', 'b'))],
  ['$.a[?(@.b = @.c)]', all(exists(p('a', 'b')), exists(p('a', 'c')))],
  ['$.a[?(@.b != 1)]', exists(p('a', 'b'))],
  ['$.a[?(@.b contains "x")]', exists(p('a', 'b'))],
  ['$.a[?("xyz" contains @.b)]', exists(p('a', 'b'))],
  ['$.a[?(@.b)]', exists(p('a', 'b'))],
  ['$.a[?(@.b.c[2][-1])]', exists(p('a', 'b', 'c', 2, -1))],
  ['$.a[?(not @.b = 1)]', exists(p('a'))],
  ['$.a[?(true)]', exists(p('a'))],
  [
    '$.data[*][?(@.value = 54 and @.destinationTable = "Transactions.instrument" and @.size > 1)]',
    all(
      {
        kind: 'members',
        path: p('data', '*'),
        equal: [
          { name: 'destinationTable', value: 'Transactions.instrument' },
          { name: 'value', value: 54 },
        ],
      },
      compares(p('data', '*', 'size'), '>', 1),
    ),
  ],
  ['$.a[?(@.b = 1 or @.c = "x")]', any(eq(p('a', 'b'), 1), eq(p('a', 'c'), 'x'))],
  ['$.a[?(@.x = 1 and (@.y = 2 or @.z = 3))]', all(eq(p('a', 'x'), 1), any(eq(p('a', 'y'), 2), eq(p('a', 'z'), 3)))],
  // `or` binds tighter than `and`: the same tree as the line above.
  ['$.a[?(@.x = 1 and @.y = 2 or @.z = 3)]', all(eq(p('a', 'x'), 1), any(eq(p('a', 'y'), 2), eq(p('a', 'z'), 3)))],
  ['$.a[?($.t = "x")].b', all(eq(p('t'), 'x'), exists(p('a', 'b')))],
  ['$.a[?(@.b.length() = 3)]', exists(p('a', 'b'))],
  ['$.a[?(@..b = 3)]', eq(p('a', '..', 'b'), 3)],
  ['$.a[?(@["b","c"] = 3)]', any(exists(p('a', 'b')), exists(p('a', 'c')))],
  ['$.a[?(@[*].b = 3)]', eq(p('a', '*', 'b'), 3)],
  ['$.a[?(@[?(@.k)].b = 3)]', all(exists(p('a', 'k')), eq(p('a', 'b'), 3))],
  ['$.a["x","y"]', any(exists(p('a', 'x')), exists(p('a', 'y')))],
  ['$.a[0,"k"].b', any(exists(p('a', 0, 'b')), exists(p('a', 'k', 'b')))],
  ['$.a[1:3].b', exists(p('a', '*', 'b'))],
  ['$.a[-1]', exists(p('a', -1))],
  ['$.a[$.k].b', exists(p('a', '*', 'b'))],
  ['$.a.length()', exists(p('a'))],
  ['$.a.keys()[0]', exists(p('a'))],
  ['$..x', exists(p('..', 'x'))],
  ['$.a..x', exists(p('a', '..', 'x'))],
  ['$[?(@.a = 1)]..x', all(eq(p('a'), 1), exists(p('..', 'x')))],
];

const DOCUMENTS: JsonValue[] = [
  EVENT,
  {},
  null,
  [],
  { a: { b: 1, c: 'x', x: 1, y: 2 } },
  { a: [{ b: 3, k: 1 }, { b: 1 }], t: 'x' },
  { a: { b: 'xyz', x: 1, z: 3, length: 3 }, k: 'b' },
  { a: { b: { c: [0, 1, [5, 6]] } } },
  { a: [1, 2, 3, { b: 4 }] },
  { a: { b: [1], x: 1, y: 2 } },
  { a: { b: { k: 1 }, c: { k: 1 } } },
  { t: 'x', a: { b: 0 } },
  { a: 1, x: 2 },
];

describe('jsonpath2 requirement shapes', () => {
  for (const [expression, expected] of SHAPES) {
    it(expression, () => {
      const query = compileJsonPath2(expression);
      assert.deepEqual(query.requirement, expected);
      for (const document of DOCUMENTS) {
        if (query.matches(document)) assert.ok(holds(query.requirement, document), JSON.stringify(document));
      }
    });
  }

  it('gives up on long chains of unions instead of multiplying branches', () => {
    const expression = `$${'["a","b","c","d"]'.repeat(6)}`;
    const query = compileJsonPath2(expression);
    const size = JSON.stringify(query.requirement).length;
    assert.ok(size < 20_000, `requirement of ${size} characters`);
    assert.equal(holds(query.requirement, { a: { b: { c: { d: { a: { b: 1 } } } } } }), true);
  });
});
