import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { postgresTarget } from '../../src/db/postgres-target.js';

describe('postgresTarget', () => {
  it('takes ?schema= out of the URL and makes it the search_path, before the other settings', () => {
    const target = postgresTarget('postgres://u:p@db:5432/app?schema=tenant_1&sslmode=disable', ['statement_timeout=5000']);
    assert.equal(target.connectionString, 'postgres://u:p@db:5432/app?sslmode=disable');
    assert.equal(target.schema, 'tenant_1');
    assert.equal(target.options, '-c search_path=tenant_1 -c statement_timeout=5000');
  });

  it('sets nothing when the URL names no schema and no setting is asked for', () => {
    const target = postgresTarget('postgres://db/app');
    assert.equal(target.schema, undefined);
    assert.equal(target.options, undefined);
  });

  it('refuses a schema name that is not a plain identifier, before it reaches a setting', () => {
    for (const name of ['a b', 'x,public', '1abc', 'a-b', `a${'b'.repeat(63)}`, '']) {
      const url = `postgres://db/app?schema=${encodeURIComponent(name)}`;
      assert.throws(() => postgresTarget(url, ['statement_timeout=1']), /invalid schema name in the database URL/, name);
    }
  });
});
