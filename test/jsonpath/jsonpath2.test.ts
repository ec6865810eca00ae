import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { facilityEvent } from '../support/fixtures.js';
import type { JsonValue } from '../../src/json.js';
import { compileJsonPath2 } from '../../src/jsonpath/jsonpath2/index.js';
import { holds } from '../../src/jsonpath/requirement.js';

// Read from the compiled test in dist/test/jsonpath/.
const EVENT = facilityEvent();
const XLS_NAME = 'パソコン資産管理台帳（S&T HK）_現地調達PC.xls';

const MISC = JSON.parse(
  JSON.stringify({
    a: null,
    b: false,
    c: 0,
    n: 1234,
    s: '1234',
    f: 1.5,
    empty: [],
    obj: {},
    list: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    パソコン: { 名前: 'ノート' },
    word: 'héllo wörld',
    emoji: 'a😀b',
    tags: ['x', 'y', { k: 1 }],
    meta: { owner: 'ann', level: 3, nested: { deep: true } },
    ['__proto__']: { polluted: true },
    constructor: 'plain',
    keys: { and: 1, or: 2, not: 3, true: 4, contains: 5 },
    idx: { i: 2, neg: -1, key: 'owner', flag: true, half: 1.5 },
    items: [
      { id: 1, t: 'a', v: 10 },
      { id: 2, t: 'b', v: 20, on: true },
      { id: 3, t: 'a', v: null },
      { id: 4, t: 'c' },
    ],
  }),
) as JsonValue;

const STORE: JsonValue = {
  store: {
    book: [
      { category: 'reference', author: 'Nigel Rees', title: 'Sayings of the Century', price: 8.95 },
      { category: 'fiction', author: 'Evelyn Waugh', title: 'Sword of Honour', price: 12.99 },
      { category: 'fiction', author: 'Herman Melville', title: 'Moby Dick', isbn: '0-553-21311-3', price: 8.99 },
      { category: 'fiction', author: 'J. R. R. Tolkien', title: 'The Lord of the Rings', isbn: '0-395-19395-8', price: 22.99 },
    ],
    bicycle: { color: 'red', price: 19.95 },
  },
};
const TITLES = ['Sayings of the Century', 'Sword of Honour', 'Moby Dick', 'The Lord of the Rings'];
const HELLO: JsonValue = { hello: 'Hello, World!' };
const FOO: JsonValue = { foo: 'bar', fum: 'baz' };

interface Case {
  expression: string;
  document: JsonValue;
  values: JsonValue[];
  paths?: string[];
}

const c = (expression: string, document: JsonValue, values: JsonValue[], paths?: string[]): Case =>
  paths === undefined ? { expression, document, values } : { expression, document, values, paths };

const EVENT_CASES: Case[] = [
  c('$.data.*[?(@.value="Blah")].value', EVENT, ['Blah', 'Blah'], ["$['data'][5]['value']", "$['data'][6]['value']"]),
  c('$.data[*][?(@.size > 100)].name', EVENT, ['foo.txt'], ["$['data'][7]['name']"]),
  c('$.data[*][?(@.destinationTable = "Files")].name', EVENT, ['foo.txt', 'bar.txt', XLS_NAME]),
  c('$.data[*][?(@.destinationTable = "TransactionKeyValue")].key', EVENT, ['Tag', 'Taggy', 'Taggier']),
  c('$.data[*][?(@.destinationTable = "Transactions._id")].value', EVENT, [1234], ["$['data'][0]['value']"]),
  c('$.data[*][?(@.value = 1234)].destinationTable', EVENT, ['Transactions._id']),
  c('$.data[*][?(@.value = "1234")].destinationTable', EVENT, []),
  c('$.data[*][?(@.value = 1234.0)].destinationTable', EVENT, ['Transactions._id']),
  c('$.data[*][?(@.value = 12.34e2)].destinationTable', EVENT, ['Transactions._id']),
  // Verbatim string: the fixture holds a backslash, u, 0, 0, e, 9.
  c('$.data[*][?(@.value = "Nam\\u00e9")].key', EVENT, ['Tag'], ["$['data'][4]['key']"]),
  c('$.data[*][?(@.value = "Namé")].key', EVENT, []),
  c('$.data[*][?(@.value = "1236é")].destinationTable', EVENT, ['Transactions.project']),
  c('$.data[*][?(@.value = "1236\\u00e9")].destinationTable', EVENT, []),
  c('$.data[9].name', EVENT, [XLS_NAME], ["$['data'][9]['name']"]),
  c('$["data"][9]["name"]', EVENT, [XLS_NAME], ["$['data'][9]['name']"]),
  c('$.data[*][?(@.name = "パソコン資産管理台帳（S&T HK）_現地調達PC.xls")].size', EVENT, [4]),
  c('$.data[*][?(@.name contains "現地調達")].size', EVENT, [4]),
  c('$.data[*][?(@._id)]._id', EVENT, [34, 35]),
  c('$.data[*][?(not @._id)].destinationTable', EVENT, [
    'Transactions._id',
    'Transactions.submitter',
    'Transactions.project',
    'Transactions.instrument',
    'TransactionKeyValue',
    'TransactionKeyValue',
    'TransactionKeyValue',
    'Files',
  ]),
  c('$.data[*][?(@.destinationTable = "Files" and @.size < 100)].name', EVENT, ['bar.txt', XLS_NAME]),
  c('$.data[*][?(@.size >= 128 or @.key = "Tag")].destinationTable', EVENT, ['TransactionKeyValue', 'Files']),
  c('$.data[*][?(@.destinationTable contains "Transactions.")].value', EVENT, [1234, 10, '1236é', 54]),
  c('$.data[*][?($.eventType = "org.pacifica.metadata.ingest" and @._id = 35)].name', EVENT, ['bar.txt']),
  c('$.data[*][?($.eventType = "other" and @._id = 35)].name', EVENT, []),
  c('$[?(@.eventType = "org.pacifica.metadata.ingest")].eventID', EVENT, ['C234-1234-1234'], ["$['eventID']"]),
  c('$.data[?(@.destinationTable = "Files")]', EVENT, []),
  c('$..hashtype', EVENT, ['sha1', 'sha1', 'sha1'], ["$['data'][7]['hashtype']", "$['data'][8]['hashtype']", "$['data'][9]['hashtype']"]),
  c('$.extensions.*', EVENT, ['value'], ["$['extensions']['comExampleExtension']"]),
  c('$.data.length()', EVENT, [10], ["$['data'].length()"]),
  c('$.data[-3:]._id', EVENT, [34, 35], ["$['data'][7]['_id']", "$['data'][8]['_id']"]),
  c('$.eventType.substring(13)', EVENT, ['metadata.ingest'], ["$['eventType'].substring(13)"]),
  c('$.data[*][?(@.name.length() = 29)].subdir', EVENT, ['data/a/c']),
];

// Paths of names and indices in filters are read directly (PathExpression.singular), not walked.
const ROWS: JsonValue = { rows: [[1, 2], [3, 4], [5], { 0: 'member zero' }, 'ab'], first: { inner: [7, 8] } };
const SINGULAR_PATH_CASES: Case[] = [
  c('$.rows[*][?(@[-1] = 2)]', ROWS, [[1, 2]]),
  c('$.rows[*][?(@[1] = 4)]', ROWS, [[3, 4]]),
  c('$.rows[*][?(@[-2])]', ROWS, [
    [1, 2],
    [3, 4],
  ]),
  c('$.rows[*][?(@[-3])]', ROWS, []),
  c('$.rows[*][?(@[0] = 5)]', ROWS, [[5]]),
  c('$.rows[*][?(@[0] = "a")]', ROWS, []),
  c('$[?($.first.inner[1] = 8)].first.inner[0]', ROWS, [7]),
  c('$[?($.first.inner[2])].first', ROWS, []),
  c('$[?($.first.missing.inner)].first', ROWS, []),
];

const MISC_CASES: Case[] = [
  c('$', MISC, [MISC], ['$']),
  c('$.a', MISC, [null], ["$['a']"]),
  // null versus missing, existence tests
  c('$[?(@.a = null)].n', MISC, [1234]),
  c('$[?(@.missing = null)].n', MISC, []),
  c('$[?(@.a)].n', MISC, [1234]),
  c('$[?(@.b)].n', MISC, [1234]),
  c('$[?(@.missing)].n', MISC, []),
  c('$[?(@.a != 1)].n', MISC, [1234]),
  c('$[?(@.missing != 1)].n', MISC, []),
  c('$[?(not @.missing)].n', MISC, [1234]),
  // numbers, strings, booleans
  c('$[?(@.n = 1234)].s', MISC, ['1234']),
  c('$[?(@.s = 1234)].s', MISC, []),
  c('$[?(@.s = "1234")].n', MISC, [1234]),
  c('$[?(@.n = "1234")].n', MISC, []),
  c('$[?(@.b = 0)].n', MISC, []),
  c('$[?(@.c = false)].n', MISC, []),
  c('$[?(@.idx.flag = 1)].n', MISC, []),
  c('$[?(@.idx.flag < 2)].n', MISC, []),
  c('$[?(@.idx.flag = true)].n', MISC, [1234]),
  c('$[?(@.s > "1")].n', MISC, []),
  c('$[?(@.s < "9")].n', MISC, []),
  c('$[?(@.f > 1 and @.f < 2)].n', MISC, [1234]),
  c('$[?(@.n >= 1234 and @.n <= 1234)].n', MISC, [1234]),
  c('$[?(@.n <= 1233)].n', MISC, []),
  // bare values: Python truthiness
  c('$[?(true)].n', MISC, [1234]),
  c('$[?(0)].n', MISC, []),
  c('$[?("")].n', MISC, []),
  c('$[?([])].n', MISC, []),
  c('$[?(null)].n', MISC, []),
  c('$[?({"k": 1})].n', MISC, [1234]),
  // empty arrays and objects
  c('$.empty[*]', MISC, []),
  c('$.empty[0]', MISC, []),
  c('$.empty[::-1]', MISC, []),
  c('$.obj.*', MISC, []),
  c('$.empty.length()', MISC, [0]),
  c('$.obj.keys()', MISC, [[]]),
  c('$[?(@.empty)].n', MISC, [1234]),
  c('$[?(@.empty = [])].n', MISC, [1234]),
  c('$[?(@.obj = {})].n', MISC, [1234]),
  c('$[?(@.obj = [])].n', MISC, []),
  // unicode, prototype names, keywords as names
  c('$["パソコン"]["名前"]', MISC, ['ノート'], ["$['パソコン']['名前']"]),
  c('$[?(@["パソコン"]["名前"] = "ノート")].n', MISC, [1234]),
  c('$["__proto__"].polluted', MISC, [true], ["$['__proto__']['polluted']"]),
  c('$.constructor', MISC, ['plain']),
  c('$.obj.constructor', MISC, []),
  c('$.obj["__proto__"]', MISC, []),
  c('$.meta.toString', MISC, []),
  c('$.list.length', MISC, []),
  c('$.keys.and', MISC, [1]),
  c('$.keys.or', MISC, [2]),
  c('$.keys.not', MISC, [3]),
  c('$.keys.true', MISC, [4]),
  c('$.keys.contains', MISC, [5]),
  c('$[?(@.keys.not = 3)].n', MISC, [1234]),
  // indices and slices (Python slice semantics)
  c('$.list[-1]', MISC, [9], ["$['list'][9]"]),
  c('$.list[-10]', MISC, [0]),
  c('$.list[-11]', MISC, []),
  c('$.list[10]', MISC, []),
  c('$.list[1:4]', MISC, [1, 2, 3], ["$['list'][1]", "$['list'][2]", "$['list'][3]"]),
  c('$.list[::3]', MISC, [0, 3, 6, 9]),
  c('$.list[::-1]', MISC, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]),
  c('$.list[8:2:-2]', MISC, [8, 6, 4], ["$['list'][8]", "$['list'][6]", "$['list'][4]"]),
  c('$.list[-1::-4]', MISC, [9, 5, 1]),
  c('$.list[-3:]', MISC, [7, 8, 9]),
  c('$.list[:-7]', MISC, [0, 1, 2]),
  c('$.list[-20:2]', MISC, [0, 1]),
  c('$.list[5:100]', MISC, [5, 6, 7, 8, 9]),
  c('$.list[2:-20:-1]', MISC, [2, 1, 0]),
  c('$.list[::0]', MISC, []),
  c('$.list[:]', MISC, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
  c('$.list[7::]', MISC, [7, 8, 9]),
  c('$.meta[1:]', MISC, []),
  // unions, wildcards, bracketed and dotted names
  c('$.list[0,-1,0]', MISC, [0, 9, 0], ["$['list'][0]", "$['list'][9]", "$['list'][0]"]),
  c('$.meta["owner","level","missing"]', MISC, ['ann', 3]),
  c('$.list[1:3,7]', MISC, [1, 2, 7]),
  c(
    '$.meta[?(@.level = 3),"owner"]',
    MISC,
    [{ owner: 'ann', level: 3, nested: { deep: true } }, 'ann'],
    ["$['meta']", "$['meta']['owner']"],
  ),
  c('$.meta.*', MISC, ['ann', 3, { deep: true }]),
  c('$["meta"]["owner"]', MISC, ['ann'], ["$['meta']['owner']"]),
  c('$.word[*]', MISC, []),
  // recursive descent: the node itself first, then its children depth first
  c(
    '$.meta..*',
    MISC,
    ['ann', 3, { deep: true }, true],
    ["$['meta']['owner']", "$['meta']['level']", "$['meta']['nested']", "$['meta']['nested']['deep']"],
  ),
  c('$.meta..[?(@.deep)]', MISC, [{ deep: true }], ["$['meta']['nested']"]),
  c('$..deep', MISC, [true]),
  c('$.tags..*', MISC, ['x', 'y', { k: 1 }, 1]),
  c('$..[?(@.k = 1)]', MISC, [{ k: 1 }], ["$['tags'][2]"]),
  c('$..["owner","deep"]', MISC, ['ann', true]),
  c('$.meta..length()', MISC, [3], ["$['meta']['owner'].length()"]),
  // nested paths as subscripts
  c('$.list[$.idx.i]', MISC, [2], ["$['list'][2]"]),
  c('$.list[$.idx.neg]', MISC, [9]),
  c('$.meta[$.idx.key]', MISC, ['ann']),
  c('$.list[$.idx.flag]', MISC, []),
  c('$.list[$.idx.half]', MISC, []),
  c('$.list[$.items[*].id]', MISC, [1, 2, 3, 4]),
  c('$.items[*][@.t]', MISC, []),
  // functions
  c('$.meta.keys()', MISC, [['owner', 'level', 'nested']], ["$['meta'].keys()"]),
  c('$.meta.values()', MISC, [['ann', 3, { deep: true }]]),
  c('$.meta.entries()', MISC, [
    [
      ['owner', 'ann'],
      ['level', 3],
      ['nested', { deep: true }],
    ],
  ]),
  c('$.tags.keys()', MISC, [[0, 1, 2]]),
  c('$.tags.values()', MISC, [['x', 'y', { k: 1 }]]),
  c('$.tags.entries()[1]', MISC, [[1, 'y']], ["$['tags'].entries()[1]"]),
  c(
    '$.keys.keys()[*]',
    MISC,
    ['and', 'or', 'not', 'true', 'contains'],
    ["$['keys'].keys()[0]", "$['keys'].keys()[1]", "$['keys'].keys()[2]", "$['keys'].keys()[3]", "$['keys'].keys()[4]"],
  ),
  c('$.list.length()', MISC, [10]),
  c('$.list[length()]', MISC, [10], ["$['list'].length()"]),
  c('$.n.length()', MISC, []),
  c('$.meta.length()', MISC, []),
  c('$.list.length(1)', MISC, []),
  c('$.emoji.length()', MISC, [3]),
  c('$.emoji.charAt(1)', MISC, ['😀']),
  c('$.word.charAt(0)', MISC, ['h'], ["$['word'].charAt(0)"]),
  c('$.word.charAt(-1)', MISC, ['d']),
  c('$.word.charAt(100)', MISC, []),
  c('$.word.charAt(1.5)', MISC, []),
  c('$.word.charAt(true)', MISC, []),
  c('$.word.substring(1, 4)', MISC, ['éll'], ["$['word'].substring(1,4)"]),
  c('$.word.substring(-5)', MISC, ['wörld']),
  c('$.word.substring(-5, -1)', MISC, ['wörl']),
  c('$.word.substring(4, 2)', MISC, ['']),
  c('$.word.substring("1")', MISC, []),
  c('$.word[substring(0,1)]', MISC, ['h'], ["$['word'].substring(0,1)"]),
  c('$.word.charAt($.idx.i)', MISC, ['l'], ["$['word'].charAt($.idx.i)"]),
  c('$.word.charAt($.list[0:3])', MISC, ['h', 'é', 'l']),
  c('$.word.substring($.list[1:3], $.list[4:6])', MISC, ['éll', 'éllo', 'll', 'llo']),
  c('$.items[?(@.length() > 3)][0].id', MISC, [1]),
  c('$.list[?(@.length() = 10)][-2]', MISC, [8]),
  // filters test the node itself
  c('$.items[?(@.id)]', MISC, []),
  c('$.items[*][?(@.id)].id', MISC, [1, 2, 3, 4]),
  c('$.items[*][?(@.t = "a")].id', MISC, [1, 3], ["$['items'][0]['id']", "$['items'][2]['id']"]),
  c('$.items[1:][?(@.t != "a")].id', MISC, [2, 4]),
  c('$.items[*][?(@.v = null)].id', MISC, [3]),
  c('$.items[*][?(@.v != null)].id', MISC, [1, 2]),
  c('$.items[*].on', MISC, [true]),
  c('$[?(@.items[*].v > 15)].n', MISC, [1234]),
  // contains
  c('$[?(@.word contains "llo w")].n', MISC, [1234]),
  c('$[?(@.word contains "xyz")].n', MISC, []),
  c('$[?(@.word contains 1)].n', MISC, []),
  c('$[?(@.tags contains "y")].n', MISC, [1234]),
  c('$[?(@.tags contains {"k": 1.0})].n', MISC, [1234]),
  c('$[?(@.tags contains {})].n', MISC, []),
  c('$[?(@.list contains 3)].n', MISC, [1234]),
  c('$[?(@.meta contains {"owner": "ann"})].n', MISC, [1234]),
  c('$[?(@.meta contains {"nested": {"deep": true}, "level": 3})].n', MISC, [1234]),
  c('$[?(@.meta contains {"owner": "bob"})].n', MISC, []),
  c('$[?(@.meta contains {})].n', MISC, [1234]),
  c('$[?(@.meta contains "owner")].n', MISC, []),
  c('$[?(@.n contains 1)].n', MISC, []),
  c('$[?(@.meta.owner contains $.meta.owner)].n', MISC, [1234]),
  c('$[?("the ann" contains @.meta.owner)].n', MISC, [1234]),
  // and / or / not: `or` binds tighter than `and`
  c('$[?(@.missing = 1 and @.n = 1 or @.n = 1234)].n', MISC, []),
  c('$[?((@.missing = 1 and @.n = 1) or @.n = 1234)].n', MISC, [1234]),
  c('$[?(@.n = 1234 or @.missing = 1 and @.missing = 2)].n', MISC, []),
  c('$[?(@.n = 1234 or (@.missing = 1 and @.missing = 2))].n', MISC, [1234]),
  c('$[?(not @.n = 1)].n', MISC, [1234]),
  c('$[?(not not @.n)].n', MISC, [1234]),
  c('$[?(not (@.n = 1234 or @.a))].n', MISC, []),
  // path versus path: any pair
  c('$.items[*][?(@.id = $.idx.i)].t', MISC, ['b']),
  c('$[?(@.list[*] = @.items[*].id)].n', MISC, [1234]),
  c('$[?(@.list[*] = @.missing[*])].n', MISC, []),
  // whitespace between tokens
  c('\t$.items[ * ][ ?( @.id\n=\r\n2 ) ] . t ', MISC, ['b']),
];

const PYTHON_SUITE_CASES: Case[] = [
  c('$.store.book[*].author', STORE, ['Nigel Rees', 'Evelyn Waugh', 'Herman Melville', 'J. R. R. Tolkien']),
  c('$..author', STORE, ['Nigel Rees', 'Evelyn Waugh', 'Herman Melville', 'J. R. R. Tolkien']),
  c('$.store..price', STORE, [8.95, 12.99, 8.99, 22.99, 19.95]),
  c('$.store.*.color', STORE, ['red'], ["$['store']['bicycle']['color']"]),
  c('$..book[2].title', STORE, ['Moby Dick']),
  c('$..book[-1:].title', STORE, ['The Lord of the Rings']),
  c('$..book[3:4:1].title', STORE, ['The Lord of the Rings']),
  c('$..book[0,1].title', STORE, TITLES.slice(0, 2)),
  c('$..book[:2:].title', STORE, TITLES.slice(0, 2)),
  c('$..book[::2].title', STORE, [TITLES[0]!, TITLES[2]!]),
  c('$..book[*][?(@.isbn)].title', STORE, TITLES.slice(2)),
  c('$..book[*][?(@.price<10)].title', STORE, [TITLES[0]!, TITLES[2]!]),
  c('$..book[*][?(@.author = "Nigel Rees")].title', STORE, [TITLES[0]!]),
  c('$..book[*][?(@.category != "fiction")].title', STORE, [TITLES[0]!]),
  c('$..book[*][?(@.price>=10)].title', STORE, [TITLES[1]!, TITLES[3]!]),
  ...['<', '<=', '>', '>='].map((op) => c(`$[?(@.hello ${op} "string")]`, HELLO, [])),
  ...['{"bar": "baz"}', '["bar", "baz"]', '42', '3.14159', 'false', 'true', 'null'].map((v) => c(`$[?(@.hello = ${v})]`, HELLO, [])),
  c('$[?(0)]["foo"]', FOO, []),
  c('$[?(0 = 0)]["foo"]', FOO, ['bar']),
  c('$[?(0 = @["fum"])]["foo"]', FOO, []),
  c('$[?(@["foo"] = @["fum"])]["foo"]', FOO, []),
  c('$["collection"][$["index"]]', { collection: ['foo', 'bar'], index: [] }, []),
  c('$["collection"][$["index"]]', { collection: ['foo', 'bar'], index: 1 }, ['bar']),
  c('$["collection"][$["index"][*]]', { collection: ['foo', 'bar', 'fum', 'baz'], index: [1, 3] }, ['bar', 'baz']),
  c('$["collection"][$["index"][*]]', { collection: { foo: 'bar', fum: 'baz' }, index: ['foo', 'fum'] }, ['bar', 'baz']),
  c('$["collection"][entries()][*]', { collection: { foo: 'bar', fum: 'baz' } }, [
    ['foo', 'bar'],
    ['fum', 'baz'],
  ]),
  c('$.length()', 'abc', [3], ['$.length()']),
  c('$[*]', 'abc', []),
];

const CASES = [...EVENT_CASES, ...SINGULAR_PATH_CASES, ...MISC_CASES, ...PYTHON_SUITE_CASES];

describe('jsonpath2 selection', () => {
  for (const { expression, document, values, paths } of CASES) {
    it(expression, () => {
      const query = compileJsonPath2(expression);
      const selection = query.select(document);
      assert.deepEqual(selection.values, values);
      assert.equal(selection.paths.length, selection.values.length);
      if (paths !== undefined) assert.deepEqual(selection.paths, paths);
      assert.equal(query.matches(document), values.length > 0);
    });
  }
});

describe('jsonpath2 matches()', () => {
  it('stops at the first node without visiting the rest', () => {
    const list: JsonValue[] = [1];
    Object.defineProperty(list, 1, { enumerable: true, get: () => assert.fail('second element visited') });
    const query = compileJsonPath2('$.list[*]');
    assert.equal(query.matches({ list }), true);
    assert.throws(() => query.select({ list }), /second element visited/);
  });

  it('evaluates without parsing again (the compiled query is reusable)', () => {
    const query = compileJsonPath2('$.data[*][?(@.size > 100)].name');
    assert.deepEqual(query.select(EVENT).values, ['foo.txt']);
    assert.deepEqual(query.select({ data: [{ size: 101, name: 'x' }] }).values, ['x']);
    assert.equal(query.matches({ data: [] }), false);
  });
});

const SOUNDNESS_DOCUMENTS: JsonValue[] = [
  EVENT,
  MISC,
  STORE,
  HELLO,
  FOO,
  {},
  [],
  null,
  'abc',
  0,
  { data: [] },
  { data: [{ destinationTable: 'Files', size: 101, name: 'x', value: 'Blah' }] },
  { data: { x: { value: 'Blah', size: 200, name: 'y' } } },
  { list: [1], items: [{ id: 0, t: 'a' }], n: 1234, idx: { i: 0 }, meta: { owner: 'ann' } },
  ...CASES.map((testCase) => testCase.document),
];

describe('jsonpath2 requirement soundness', () => {
  it('holds for every document an expression matches', () => {
    let matched = 0;
    for (const { expression } of CASES) {
      const query = compileJsonPath2(expression);
      for (const document of SOUNDNESS_DOCUMENTS) {
        if (!query.matches(document)) continue;
        matched++;
        assert.ok(
          holds(query.requirement, document),
          `${expression}: requirement ${JSON.stringify(query.requirement)} fails on ${JSON.stringify(document)}`,
        );
      }
    }
    assert.ok(matched > 100);
  });
});
