import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonValue } from '../../src/json.js';
import { MemberValues } from '../../src/matching/member-values.js';

const found = (values: MemberValues<string>, object: JsonValue): string[] => {
  const items: string[] = [];
  values.visit(object, (item) => items.push(item));
  return items.sort();
};

describe('member values', () => {
  it('finds the items whose members an object has, each value as equals compares it', () => {
    const values = new MemberValues<string>();
    values.add(
      [
        { name: 'table', value: 'project' },
        { name: 'value', value: '1234' },
      ],
      'project 1234',
    );
    values.add(
      [
        { name: 'table', value: 'project' },
        { name: 'value', value: 1234 },
      ],
      'project number 1234',
    );
    values.add(
      [
        { name: 'key', value: 'Tag' },
        { name: 'table', value: 'kv' },
        { name: 'value', value: null },
      ],
      'null tag',
    );
    assert.deepEqual(found(values, { table: 'project', value: '1234', other: 1 }), ['project 1234']);
    assert.deepEqual(found(values, { table: 'project', value: 1234.0 }), ['project number 1234']);
    assert.deepEqual(found(values, { table: 'project', value: ['1234'] }), []);
    assert.deepEqual(found(values, { table: 'project' }), []);
    assert.deepEqual(found(values, { table: 'kv', key: 'Tag', value: null }), ['null tag']);
    assert.deepEqual(found(values, [{ table: 'project', value: '1234' }]), []);
    assert.deepEqual(found(values, JSON.parse('{"__proto__": {"table": "project"}, "table": "project", "value": "1234"}')), [
      'project 1234',
    ]);
  });

  it('forgets removed items, and the levels they leave empty', () => {
    const values = new MemberValues<string>();
    const a = [
      { name: 'table', value: 'project' },
      { name: 'value', value: '1' },
    ];
    const b = [
      { name: 'table', value: 'project' },
      { name: 'value', value: '2' },
    ];
    values.add(a, 'a');
    values.add(b, 'b');
    values.add(b, 'b2');
    values.remove(b, 'b');
    assert.deepEqual([...values.items(b)], ['b2']);
    values.remove(b, 'b2');
    values.remove(a, 'a');
    values.remove(a, 'never added');
    assert.deepEqual([...values.items(a)], []);
    assert.deepEqual(found(values, { table: 'project', value: '1' }), []);
    assert.equal((values as unknown as { byNames: Map<string, unknown> }).byNames.size, 0);
    values.add(a, 'a again');
    assert.deepEqual(found(values, { table: 'project', value: '1' }), ['a again']);
  });
});
