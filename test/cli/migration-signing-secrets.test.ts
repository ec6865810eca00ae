/**
 * Migration 0002 on a database made at version 0001 with subscriptions in it: `dbsync` gives
 * each its own signing secret.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, testBackends } from '../support/database.js';
import { migrateBefore } from '../support/migrations.js';
import { runCli } from '../support/processes.js';
import { subscriptionRow } from '../support/subscription-row.js';

const VERSION_1_COLUMNS = [
  'uuid',
  'owner',
  'name',
  'jsonpath',
  'dialect',
  'target_url',
  'auth',
  'extensions',
  'version',
  'created',
  'updated',
  'deleted',
  'disabled',
  'error',
] as const;

for (const backend of testBackends()) {
  describeOn(backend, `migration 0002-signing-secrets (${backend.name})`, () => {
    it('gives every subscription of a version 1 database a secret of its own', async () => {
      const database = await backend.create();
      const handle = openDatabase(database.url);
      try {
        await migrateBefore(handle, '0002-signing-secrets');
        const rows = [subscriptionRow(), subscriptionRow({ deleted: 5 }), subscriptionRow({ owner: 'bob' })];
        for (const row of rows) {
          // Only the columns of version 0001 (frozen, as it is): later migrations add the others.
          const version1 = Object.fromEntries(VERSION_1_COLUMNS.map((column) => [column, row[column]]));
          await handle.db
            .insertInto('subscriptions')
            .values(version1 as unknown as typeof row)
            .execute();
        }

        const synced = await runCli(['--database-url', database.url, 'dbsync']);
        assert.equal(synced.code, 0, synced.stderr);
        assert.match(synced.stdout, /0002-signing-secrets/);
        assert.doesNotMatch(synced.stdout + synced.stderr, /whsec_/, 'no secret is printed');

        const migrated = await handle.db.selectFrom('subscriptions').selectAll().execute();
        assert.equal(migrated.length, rows.length);
        for (const row of migrated) {
          assert.match(row.signing_secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
          assert.deepEqual([row.previous_signing_secret, row.secret_rotated], [null, null]);
        }
        assert.equal(new Set(migrated.map((row) => row.signing_secret)).size, rows.length, 'each its own');
        assert.equal((await runCli(['--database-url', database.url, 'dbchk', '--equal'])).code, 0);
      } finally {
        await handle.close();
        await database.cleanup();
      }
    });
  });
}
