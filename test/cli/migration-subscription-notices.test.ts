/**
 * Migration 0010 on a database made at version 0009 with subscriptions in it: `dbsync` gives
 * each `notices` 0, so the service's notices reach none of them until its owner asks.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { toRecord } from '../../src/subscriptions/record.js';
import { describeOn, testBackends } from '../support/database.js';
import { migrateBefore } from '../support/migrations.js';
import { runCli } from '../support/processes.js';
import { subscriptionRow } from '../support/subscription-row.js';

const NOTICES = '0010-subscription-notices';

for (const backend of testBackends()) {
  describeOn(backend, `migration ${NOTICES} (${backend.name})`, () => {
    it('gives every existing subscription notices false, live, disabled and deleted alike', async () => {
      const database = await backend.create();
      const handle = openDatabase(database.url);
      try {
        await migrateBefore(handle, NOTICES);
        const rows = [
          subscriptionRow({ jsonpath: '$' }),
          subscriptionRow({ jsonpath: '$.data', disabled: 3 }),
          subscriptionRow({ deleted: 5 }),
        ];
        // The columns the table has at version 0009: those added since (notices, and any later) are left out.
        const table = (await handle.db.introspection.getTables()).find(
          (t) => t.name === 'subscriptions' && (handle.schema === undefined || t.schema === handle.schema),
        )!;
        const columns = table.columns.map((column) => column.name as keyof (typeof rows)[number]);
        for (const row of rows) {
          const version9 = Object.fromEntries(columns.map((column) => [column, row[column]]));
          await handle.db
            .insertInto('subscriptions')
            .values(version9 as unknown as typeof row)
            .execute();
        }

        const synced = await runCli(['--database-url', database.url, 'dbsync']);
        assert.equal(synced.code, 0, synced.stderr);
        assert.match(synced.stdout, new RegExp(NOTICES));

        const migrated = await handle.db.selectFrom('subscriptions').selectAll().execute();
        assert.equal(migrated.length, rows.length);
        for (const row of migrated) {
          assert.equal(row.notices, 0);
          assert.equal(toRecord(row, null).notices, false);
        }
        assert.equal((await runCli(['--database-url', database.url, 'dbchk', '--equal'])).code, 0);
      } finally {
        await handle.close();
        await database.cleanup();
      }
    });
  });
}
