/**
 * match() and search() read their patterns as I-Regexp (RFC 9485), evaluated by the
 * linear-time engine: what each construct means, what is no pattern at all, and the limits.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { JsonValue } from '../../src/json.js';
import { compileJsonPath } from '../../src/jsonpath/index.js';
import { MAX_PATTERN_SIZE } from '../../src/jsonpath/rfc9535/i-regexp.js';

/** The strings among `strings` that `fn(@, pattern)` selects. */
function selected(fn: 'match' | 'search', pattern: string, strings: JsonValue[]): JsonValue[] {
  // JSON's string escapes are RFC 9535's too
  return compileJsonPath(`$[?${fn}(@, ${JSON.stringify(pattern)})]`, 'rfc9535').select(strings).values;
}

/** The same with the pattern in the document, where an expression's limits do not apply. */
function selectedByDocumentPattern(fn: 'match' | 'search', pattern: string, strings: string[]): string[] {
  const document = { pattern, strings };
  return compileJsonPath(`$.strings[?${fn}(@, $.pattern)]`, 'rfc9535').select(document).values as string[];
}

describe('I-Regexp in match() and search()', () => {
  it('match() holds for the whole string, search() for any part of it', () => {
    const strings = ['b', 'ab', 'bc', 'xyz'];
    assert.deepEqual(selected('match', 'b', strings), ['b']);
    assert.deepEqual(selected('search', 'b', strings), ['b', 'ab', 'bc']);
    assert.deepEqual(selected('match', 'a|b', strings), ['b']);
    assert.deepEqual(selected('search', 'a|z', strings), ['ab', 'xyz']);
  });

  it('`.` is any character but \\n and \\r: \\u2028 and astral characters too', () => {
    const strings = ['abc', 'a\nc', 'a\rc', 'a\u2028c', 'a😀c', 'a\u0000c'];
    assert.deepEqual(selected('match', 'a.c', strings), ['abc', 'a\u2028c', 'a😀c', 'a\u0000c']);
    assert.deepEqual(selected('search', '.', ['\n', '\r\n', '']), []);
  });

  it('`^` and `$` anchor at the ends of the string, as the compliance suite reads them', () => {
    assert.deepEqual(selected('search', '^ab', ['abc', 'cab']), ['abc']);
    assert.deepEqual(selected('search', 'ab$', ['cab', 'abc']), ['cab']);
    assert.deepEqual(selected('match', '^ab.*', ['abc', 'ab', 'xab']), ['abc', 'ab']);
    // match() is anchored all the same: ^ab is not "starts with ab"
    assert.deepEqual(selected('match', '^ab', ['ab', 'abc']), ['ab']);
  });

  it('category escapes \\p{..} and \\P{..}, alone and in classes', () => {
    assert.deepEqual(selected('match', '\\p{Lu}\\P{Lu}', ['Ab', 'AB', 'Éé', 'a1']), ['Ab', 'Éé']);
    assert.deepEqual(selected('match', '\\p{Nd}+', ['123', '١٢٣', '12a']), ['123', '١٢٣']);
    assert.deepEqual(selected('match', '[\\p{L}\\p{Zs}-]+', ['Jean-Luc Picard', 'R2-D2']), ['Jean-Luc Picard']);
    assert.deepEqual(selected('match', '\\p{L}', ['a', 'ж', '字', '1', '_']), ['a', 'ж', '字']);
    // Cn, the unassigned code points, is a category of I-Regexp (U+0378 is unassigned)
    assert.deepEqual(selected('match', '\\p{Cn}', ['\u0378', 'a']), ['\u0378']);
  });

  it('character classes: negation, ranges, - first or last, escapes, `.` as itself', () => {
    const strings = ['a', 'd', '-', '.', ']', '^', 'z'];
    assert.deepEqual(selected('match', '[^a-c]', strings), ['d', '-', '.', ']', '^', 'z']);
    assert.deepEqual(selected('match', '[-a]', strings), ['a', '-']);
    assert.deepEqual(selected('match', '[a-]', strings), ['a', '-']);
    assert.deepEqual(selected('match', '[.]', strings), ['.']);
    assert.deepEqual(selected('match', '[\\]\\^]', strings), [']', '^']);
    assert.deepEqual(selected('match', '[a^]', strings), ['a', '^']);
    assert.deepEqual(selected('match', '[\\n-\\r]', ['\n', '\u000b', '\r', 'a']), ['\n', '\u000b', '\r']);
  });

  it('single-character escapes stand for the character itself', () => {
    assert.deepEqual(selected('match', 'a\\-b', ['a-b', 'a\\-b']), ['a-b']);
    assert.deepEqual(selected('match', 'a\\.b', ['a.b', 'axb']), ['a.b']);
    assert.deepEqual(selected('match', '\\(\\)\\*\\+\\?\\[\\]\\{\\}\\|\\\\\\^', ['()*+?[]{}|\\^']), ['()*+?[]{}|\\^']);
    assert.deepEqual(selected('match', 'a\\tb\\nc\\rd', ['a\tb\nc\rd']), ['a\tb\nc\rd']);
  });

  it('quantifiers, groups and alternation', () => {
    const strings = ['', 'ab', 'abab', 'ababab', 'aba'];
    assert.deepEqual(selected('match', '(ab)*', strings), ['', 'ab', 'abab', 'ababab']);
    assert.deepEqual(selected('match', '(ab)+', strings), ['ab', 'abab', 'ababab']);
    assert.deepEqual(selected('match', '(ab)?', strings), ['', 'ab']);
    assert.deepEqual(selected('match', '(ab){2}', strings), ['abab']);
    assert.deepEqual(selected('match', '(ab){2,}', strings), ['abab', 'ababab']);
    assert.deepEqual(selected('match', '(ab){0,1}|aba', strings), ['', 'ab', 'aba']);
    assert.deepEqual(selected('match', 'ab|', strings), ['', 'ab']);
  });

  it('a pattern that is not I-Regexp matches nothing, and is no error', () => {
    const notIRegexp = [
      '\\d',
      '\\w+',
      '(a',
      'a)',
      'a{,3}',
      'a{1',
      '[]',
      '[^]',
      'a**',
      '*a',
      '\\p{Foo}',
      '\\p{Cs}',
      '(?:a)',
      'a*?',
      '[a-b-c]',
      '\\$',
      '\\',
      'a]',
      'a}',
    ];
    for (const pattern of notIRegexp) {
      const strings = [pattern, 'a', '1', '', 'aaa'];
      assert.deepEqual(selected('match', pattern, strings), [], pattern);
      assert.deepEqual(selected('search', pattern, strings), [], pattern);
    }
    // a lone surrogate is no character of I-Regexp (nor of an expression: only an event has one)
    assert.deepEqual(selectedByDocumentPattern('search', 'a\ud800', ['a\ud800']), []);
  });

  it('anything but a string, as the value or the pattern, matches nothing', () => {
    assert.deepEqual(selected('match', 'a', [1, true, null, ['a'], { a: 'a' }, 'a']), ['a']);
    const query = compileJsonPath('$[?match(@.s, @.p)]', 'rfc9535');
    assert.deepEqual(query.select([{ s: 'a', p: 1 }, { s: 'a' }, { s: 'a', p: ['a'] }, { s: 'a', p: 'a' }]).values, [{ s: 'a', p: 'a' }]);
  });

  it(`a pattern of more than ${MAX_PATTERN_SIZE} atoms, counted repetitions written out, matches nothing`, () => {
    const rest = MAX_PATTERN_SIZE - 2_000;
    const string = `${'x'.repeat(1000)}${'y'.repeat(1000)}${'z'.repeat(rest)}`;
    assert.deepEqual(selectedByDocumentPattern('match', `x{1000}y{1000}z{${rest}}`, [string]), [string]);
    assert.deepEqual(selectedByDocumentPattern('match', `x{1000}y{1000}z{${rest + 1}}`, [`${string}z`]), []);
    // a group counts once, and once more for each copy
    assert.deepEqual(selectedByDocumentPattern('match', '(a|aa){512}', ['a'.repeat(600)]), ['a'.repeat(600)]);
    assert.deepEqual(selectedByDocumentPattern('match', '(a|aa){513}', ['a'.repeat(600)]), []);
    assert.deepEqual(selectedByDocumentPattern('match', 'x'.repeat(MAX_PATTERN_SIZE), ['x'.repeat(MAX_PATTERN_SIZE)]), [
      'x'.repeat(MAX_PATTERN_SIZE),
    ]);
    assert.deepEqual(selectedByDocumentPattern('match', 'x'.repeat(MAX_PATTERN_SIZE + 1), ['x'.repeat(MAX_PATTERN_SIZE + 1)]), []);
    assert.deepEqual(selectedByDocumentPattern('match', '(a|aa){1000}', ['a'.repeat(1000)]), []);
    assert.deepEqual(selectedByDocumentPattern('match', '((a{10}){10}){10}', ['a'.repeat(1000)]), ['a'.repeat(1000)]);
    assert.deepEqual(selectedByDocumentPattern('match', '((a{10}){10}){20}', ['a'.repeat(2000)]), []);
    // the engine refuses a single count over 1,000, as RE2 does
    assert.deepEqual(selectedByDocumentPattern('match', 'a{1001}', ['a'.repeat(1001)]), []);
    assert.deepEqual(selectedByDocumentPattern('match', 'a{1000}', ['a'.repeat(1000)]), ['a'.repeat(1000)]);
  });

  it('patterns taken from the event, more than the cache keeps, are each compiled and evaluated', () => {
    const items = Array.from({ length: 10_100 }, (_, i) => ({ s: `id-${i}-2024`, p: `id-${i}-[0-9]{4}` }));
    items.push({ s: 'id-1-x', p: 'id-1-[0-9]{4}' });
    const query = compileJsonPath('$[?match(@.s, @.p)]', 'rfc9535');
    assert.equal(query.select(items).values.length, 10_100);
  });

  it('a pattern that fills its DFA over a long string holds at most about 64 KB for it', () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    let seed = 1;
    const coin = () => (((seed = (seed * 1103515245 + 12345) % 2 ** 31) >> 16) & 1 ? 'a' : 'b');
    const input = Array.from({ length: 100_000 }, coin).join('');
    // match(), not search(): search() skips a string without the `c` it needs before any DFA
    const queries = Array.from({ length: 30 }, (_, i) => compileJsonPath(`$[?match(@, '[ab]*a[ab]{${15 + (i % 5)}}c${i}')]`, 'rfc9535'));
    gc();
    const before = process.memoryUsage().heapUsed;
    for (const query of queries) query.matches([input]);
    gc();
    const perPattern = (process.memoryUsage().heapUsed - before) / queries.length;
    // 8.5 MB each with re2js's default budget
    assert.ok(perPattern < 512 * 1024, `${(perPattern / 1024).toFixed(0)} KB a pattern`);
  });
});
