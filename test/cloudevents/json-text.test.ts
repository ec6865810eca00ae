import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arrayElements, compactText, objectSpan, objectText, valueSpan } from '../../src/cloudevents/json-text.js';

const slice = (text: string, span: { start: number; end: number }) => text.slice(span.start, span.end);

describe('JSON source text', () => {
  it("finds each member's value text: strings with escapes and brackets, nesting, numbers as written", () => {
    const text = ' { "a" : "x\\"}]\\\\" , "d\\u0061ta":{"n":[1.50,{"s":"}"}]} ,"e":1e2,"t":true,"z":null,"a":-0.0 } ';
    const object = objectSpan(text);
    assert.deepEqual(
      object.members.map((member) => [member.name, slice(text, member)]),
      [
        ['a', '"x\\"}]\\\\"'],
        ['data', '{"n":[1.50,{"s":"}"}]}'],
        ['e', '1e2'],
        ['t', 'true'],
        ['z', 'null'],
        ['a', '-0.0'],
      ],
    );
    assert.equal(slice(text, object), text.trim());
  });

  it('finds the empty object, array elements and a lone value', () => {
    assert.deepEqual(objectSpan('{}'), { start: 0, end: 2, members: [] });
    const array = '[ 1.0 ,"]",[[]], {"a":[]} ]';
    assert.deepEqual(
      arrayElements(array).map((span) => slice(array, span)),
      ['1.0', '"]"', '[[]]', '{"a":[]}'],
    );
    assert.deepEqual(arrayElements('[]'), []);
    assert.equal(slice('\n 12345678901234567890 \n', valueSpan('\n 12345678901234567890 \n')), '12345678901234567890');
  });

  it('writes an object as JSON.stringify would, with the given members as their source text', () => {
    assert.equal(objectText({ a: 'x', data: 1.5, b: [1] }, new Map([['data', '1.50']])), '{"a":"x","data":1.50,"b":[1]}');
    assert.equal(objectText({ a: 'é' }, new Map()), JSON.stringify({ a: 'é' }));
  });

  it('compacts a text to one line without touching a value: whitespace inside strings and escaped quotes stay', () => {
    assert.equal(compactText(' { "a" : [ 1.50 , 1e2 ] ,\n\t"b\\"" : "x \\" y\\\\" }\r\n'), '{"a":[1.50,1e2],"b\\"":"x \\" y\\\\"}');
    assert.equal(compactText('12345678901234567890'), '12345678901234567890');
  });
});
