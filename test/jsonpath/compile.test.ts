import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonValue } from '../../src/json.js';
import { compileJsonPath, type DialectMode, JsonPathSyntaxError } from '../../src/jsonpath/index.js';
import { facilityEvent } from '../support/fixtures.js';

const event = facilityEvent();
// Valid in both dialects, with different meanings: RFC 9535 filters the items' members,
// jsonpath2 tests each item itself.
const BOTH = '$.data[*][?(@.size > 100)].name';
const JSONPATH2_ONLY = '$.data.*[?(@.value="Blah")].value';
const RFC_ONLY = "$.data[?@.key == 'Taggy'].value";

function syntaxError(expression: string, mode: DialectMode = 'auto'): JsonPathSyntaxError {
  try {
    compileJsonPath(expression, mode);
  } catch (error) {
    assert.ok(error instanceof JsonPathSyntaxError, `not a JsonPathSyntaxError: ${String(error)}`);
    return error;
  }
  assert.fail(`${expression} compiled in ${mode} mode`);
}

describe('dialect selection', () => {
  it('auto: RFC 9535 when the expression is valid there', () => {
    const compiled = compileJsonPath(BOTH, 'auto');
    assert.equal(compiled.dialect, 'rfc9535');
    assert.deepEqual(compiled.select(event).values, []);
  });

  it('auto: jsonpath2 when RFC 9535 refuses the expression', () => {
    const compiled = compileJsonPath(JSONPATH2_ONLY, 'auto');
    assert.equal(compiled.dialect, 'jsonpath2');
    assert.deepEqual(compiled.select(event).values, ['Blah', 'Blah']);
  });

  it('jsonpath2-first: jsonpath2 wins where both accept', () => {
    const compiled = compileJsonPath(BOTH, 'jsonpath2-first');
    assert.equal(compiled.dialect, 'jsonpath2');
    assert.deepEqual(compiled.select(event).values, ['foo.txt']);
    assert.equal(compileJsonPath(RFC_ONLY, 'jsonpath2-first').dialect, 'rfc9535');
  });

  it('rfc9535 and jsonpath2 modes accept only their own dialect', () => {
    assert.equal(compileJsonPath(RFC_ONLY, 'rfc9535').dialect, 'rfc9535');
    assert.equal(syntaxError(JSONPATH2_ONLY, 'rfc9535').dialect, 'rfc9535');
    assert.equal(compileJsonPath(JSONPATH2_ONLY, 'jsonpath2').dialect, 'jsonpath2');
    assert.equal(syntaxError(RFC_ONLY, 'jsonpath2').dialect, 'jsonpath2');
    assert.equal(compileJsonPath(BOTH, 'rfc9535').dialect, 'rfc9535');
    assert.equal(compileJsonPath(BOTH, 'jsonpath2').dialect, 'jsonpath2');
  });

  it('tests a top-level CloudEvent attribute in RFC 9535 with a root filter', () => {
    const compiled = compileJsonPath("$[?$.eventType == 'org.pacifica.metadata.ingest']");
    assert.equal(compiled.matches(event), true);
    assert.equal(compileJsonPath("$[?$.eventType == 'org.example']").matches(event), false);
  });
});

describe('root-relative expressions', () => {
  const cases: Array<[string, string, unknown[]]> = [
    ['eventType', '$.eventType', ['org.pacifica.metadata.ingest']],
    ['data[0].value', '$.data[0].value', [1234]],
    ['extensions.comExampleExtension', '$.extensions.comExampleExtension', ['value']],
    ["[?@ == 'C234-1234-1234']", "$[?@ == 'C234-1234-1234']", ['C234-1234-1234']],
    ['..hashtype', '$..hashtype', ['sha1', 'sha1', 'sha1']],
    ['data[*][?(@._id = 35)].name', '$.data[*][?(@._id = 35)].name', ['bar.txt']],
  ];
  for (const [source, expression, values] of cases) {
    it(`reads ${source} as ${expression}`, () => {
      const compiled = compileJsonPath(source);
      assert.equal(compiled.source, source);
      assert.equal(compiled.expression, expression);
      assert.deepEqual(compiled.select(event).values, values);
    });
  }

  it('leaves expressions that start with $ alone', () => {
    assert.equal(compileJsonPath('$.data').expression, '$.data');
  });
});

describe('compiled expressions', () => {
  it('answer "does it match" and "which values at which normalized paths"', () => {
    const compiled = compileJsonPath("$.data[?@.destinationTable == 'Files'].name");
    assert.equal(compiled.matches(event), true);
    const selection = compiled.select(event);
    assert.deepEqual(selection.paths, ["$['data'][7]['name']", "$['data'][8]['name']", "$['data'][9]['name']"]);
    assert.equal(selection.values[0], 'foo.txt');
    assert.equal(compiled.matches({ data: [] }), false);
  });

  it('stop at the first node in RFC 9535 too, without visiting the rest', () => {
    for (const expression of ['$.list[*]', '$.list[0:]', '$..x', '$.list[*].x']) {
      const list: JsonValue[] = [{ x: 1 }];
      Object.defineProperty(list, 1, { enumerable: true, get: () => assert.fail(`${expression}: second element visited`) });
      const compiled = compileJsonPath(expression, 'rfc9535');
      assert.equal(compiled.matches({ list }), true, expression);
      assert.throws(() => compiled.select({ list }), /second element visited/);
    }
  });

  it('evaluate a filter that reads only $ once for a node, not once per child', () => {
    let reads = 0;
    const settings = {};
    Object.defineProperty(settings, 'level', { enumerable: true, get: () => ++reads && 1 });
    const document = { settings, a: 1, b: 2, c: 3 } as JsonValue;
    assert.equal(compileJsonPath('$[?$.settings.level == 2]', 'rfc9535').matches(document), false);
    assert.equal(reads, 1);
    assert.equal(compileJsonPath('$[?$.settings.level == 1]', 'rfc9535').matches(document), true);
    assert.equal(reads, 2);
    assert.equal(compileJsonPath('$.none[?$.settings.level == 1]', 'rfc9535').matches(document), false);
    assert.equal(reads, 2, 'no child, no evaluation');
  });

  it('are reusable across documents', () => {
    const compiled = compileJsonPath('$.a');
    assert.equal(compiled.matches({ a: 1 }), true);
    assert.equal(compiled.matches({ b: 1 }), false);
    assert.equal(compiled.matches({ a: null }), true);
  });
});

describe('syntax errors', () => {
  it('give the position and what was expected', () => {
    const error = syntaxError('$.a[?@.b == 1', 'rfc9535');
    assert.equal(error.position, 13);
    assert.match(error.message, /^invalid JSONPath at position 13: .*bracket.* \(at the end of the expression\)$/);
  });

  it('report the dialect that read furthest in auto mode', () => {
    // RFC 9535 stops at the single '=' (position 18); jsonpath2 reads to the missing ')'.
    const error = syntaxError('$.data.*[?(@.value="Blah"]');
    assert.equal(error.dialect, 'jsonpath2');
    assert.equal(error.position, 25);
    assert.match(error.message, /position 25/);
  });

  it('count positions in the text the user wrote, also when it was made root-relative', () => {
    const error = syntaxError('data[');
    assert.equal(error.expression, 'data[');
    assert.equal(error.position, 5);
  });

  it('show where the error is', () => {
    const text = "$.data[?@.key === 'x']";
    const error = syntaxError(text, 'rfc9535');
    const marked = /near "(?:…)?(.*)▸(.*?)(?:…)?"\)$/.exec(error.message);
    assert.ok(marked, error.message);
    assert.equal(marked[1]! + marked[2]!, text.slice(error.position - marked[1]!.length, error.position + marked[2]!.length));
    assert.equal(marked[2]![0], text[error.position]);
  });

  it('refuse an expression longer than 2,048 characters or nested more than 32 deep, before parsing it', () => {
    const long = syntaxError(`$.a[?@.b == '${'x'.repeat(2_040)}']`);
    assert.equal(long.position, 2_048);
    assert.match(long.message, /^invalid JSONPath at position 2048: expected at most 2048 characters but found 2055 /);
    const nested = (levels: number) => `$[?${'('.repeat(levels - 1)}@.a${')'.repeat(levels - 1)}]`;
    assert.equal(compileJsonPath(nested(32)).dialect, 'rfc9535');
    const deep = syntaxError(nested(33));
    assert.equal(deep.position, 34);
    assert.match(deep.message, /expected brackets and parentheses nested at most 32 deep/);
    // Brackets inside quoted names and strings are text, not nesting.
    assert.equal(compileJsonPath(`$['${'['.repeat(40)}'][?@.a == "${'('.repeat(40)}"]`).dialect, 'rfc9535');
  });

  it('refuse an empty expression', () => {
    assert.match(syntaxError('').message, /expected a JSONPath expression/);
    assert.match(syntaxError('   ').message, /expected a JSONPath expression/);
  });

  it('come as one message fit for a 400 answer', () => {
    for (const text of ['$.', '$[', '$.a[?', '$..', '$[1:2:3:4]', "$['a", '$.a b', '$[?(@.a = )]']) {
      const error = syntaxError(text);
      assert.ok(!error.message.includes('\n'), error.message);
      assert.ok(error.position >= 0 && error.position <= text.length, `${text}: ${error.position}`);
    }
  });
});
