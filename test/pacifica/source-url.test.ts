import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readSourceUrl, type ServerSource, type SourceLocation } from '../../src/pacifica/source-url.js';

const read = (text: string) => readSourceUrl(text) as SourceLocation;
const server = (location: SourceLocation) => {
  const { host, port, database } = location as ServerSource;
  return [host, port, database];
};

describe("the original's peewee_url", () => {
  it('reads PostgreSQL under each of its schemes, with the default port, and hides the password', () => {
    for (const scheme of ['postgres', 'postgresql', 'postgres+pool', 'postgresext']) {
      const location = read(`${scheme}://pacifica:s3cret@db.internal/notify`);
      assert.equal(location.kind, 'postgres', scheme);
      assert.deepEqual(server(location), ['db.internal', 5432, 'notify']);
      assert.doesNotMatch(location.description, /s3cret/);
    }
  });

  it('reads MySQL and MariaDB, and an IPv6 host', () => {
    const location = read('mysql+pool://root@[::1]:3307/pacifica');
    assert.equal(location.kind, 'mysql');
    assert.deepEqual(server(location), ['::1', 3307, 'pacifica']);
  });

  it('reads SQLite paths as peewee does: three slashes relative, four absolute', () => {
    assert.deepEqual(read('sqlite:///notify.db'), { kind: 'sqlite', path: 'notify.db', description: 'sqlite:///notify.db' });
    assert.equal((read('sqliteext:////var/lib/pacifica/notify.db') as { path: string }).path, '/var/lib/pacifica/notify.db');
  });

  it('refuses other kinds, listing those it reads, and what holds nothing to import', () => {
    for (const text of ['redis://h/0', 'http://h/', 'notify.db', 'mongodb://h/db']) {
      assert.match(
        readSourceUrl(text) as string,
        /read from postgres:\/\/, postgresql:\/\/, mysql:\/\/ \(MySQL or MariaDB\) or sqlite:\/\/\/path$/,
        text,
      );
    }
    assert.match(readSourceUrl('sqlite:///:memory:') as string, /holds nothing to import/);
    assert.match(readSourceUrl('postgres://h') as string, /names no host or no database/);
  });
});
