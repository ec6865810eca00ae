/**
 * Migration 0011 on a database made at version 0010 with attempts in it: `dbsync` keys
 * `attempts` by (match_uuid, at, uuid), without the index by uuid nor `attempts_match`, every
 * row kept, and its rows still go with their match. Migrating down gives the old keys back.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { type DatabaseHandle, openDatabase } from '../../src/db/connect.js';
import { attemptsOfMatches } from '../../src/db/stores/deliveries.js';
import { recordAttempts } from '../../src/db/stores/matches.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventRow } from '../support/event-row.js';
import { matchRow } from '../support/match-row.js';
import { migrateBefore, migratorOf } from '../support/migrations.js';
import { runCli } from '../support/processes.js';
import { subscriptionRow } from '../support/subscription-row.js';

const ATTEMPTS_BY_MATCH = '0011-attempts-by-match';

/** The columns of `attempts`' primary key, in order, and its other indexes' names. */
async function keysOfAttempts(handle: DatabaseHandle): Promise<{ primaryKey: string[]; indexes: string[] }> {
  if (handle.capabilities.schemas) {
    const { rows } = await sql<{ name: string; primary: boolean; columns: string[] }>`
      select i.relname as name, x.indisprimary as primary,
        array(select a.attname::text from unnest(x.indkey) with ordinality k(attnum, n)
              join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum order by k.n) as columns
      from pg_index x join pg_class i on i.oid = x.indexrelid
      where x.indrelid = ${`${handle.schema ?? 'public'}.attempts`}::regclass`.execute(handle.db);
    return { primaryKey: rows.find((r) => r.primary)?.columns ?? [], indexes: rows.filter((r) => !r.primary).map((r) => r.name) };
  }
  const key = await sql<{ name: string; pk: number }>`select name, pk from pragma_table_info('attempts') where pk > 0 order by pk`.execute(
    handle.db,
  );
  const indexes = await sql<{ name: string; origin: string }>`select name, origin from pragma_index_list('attempts')`.execute(handle.db);
  return { primaryKey: key.rows.map((r) => r.name), indexes: indexes.rows.filter((r) => r.origin !== 'pk').map((r) => r.name) };
}

for (const backend of testBackends()) {
  describeOn(backend, `migration ${ATTEMPTS_BY_MATCH} (${backend.name})`, () => {
    it('keys attempts by their match and time, keeping every row and the cascade from matches, and back', async () => {
      const database = await backend.create();
      const handle = openDatabase(database.url);
      try {
        await migrateBefore(handle, ATTEMPTS_BY_MATCH);
        const subscription = subscriptionRow();
        const event = eventRow();
        const [first, second] = [
          matchRow({ event_uuid: event.uuid, subscription_uuid: subscription.uuid }),
          matchRow({ event_uuid: event.uuid, subscription_uuid: subscription.uuid }),
        ];
        await handle.db.insertInto('subscriptions').values(subscription).execute();
        await handle.db.insertInto('events').values(event).execute();
        await handle.db.insertInto('matches').values([first!, second!]).execute();
        const attempt = { stage: 'deliver' as const, status: 503, error: 'target answered 503', durationMs: 12 };
        await recordAttempts(handle.db, handle.capabilities, [
          { ...attempt, matchUuid: first!.uuid, at: 20 },
          { ...attempt, matchUuid: second!.uuid, at: 10 },
          { ...attempt, matchUuid: first!.uuid, at: 10 },
          { ...attempt, matchUuid: first!.uuid, at: 10, status: 200, error: null },
        ]);
        const before = await attemptsOfMatches(handle.db, [first!.uuid, second!.uuid]);
        assert.equal(before.length, 4);

        const synced = await runCli(['--database-url', database.url, 'dbsync']);
        assert.equal(synced.code, 0, synced.stderr);
        assert.match(synced.stdout, new RegExp(ATTEMPTS_BY_MATCH));
        assert.deepEqual(await keysOfAttempts(handle), { primaryKey: ['match_uuid', 'at', 'uuid'], indexes: [] });
        if (!handle.capabilities.schemas) {
          const { rows } = await sql<{ sql: string }>`select sql from sqlite_master where name = 'attempts'`.execute(handle.db);
          assert.match(rows[0]!.sql, /without rowid/i);
        }
        assert.deepEqual(await attemptsOfMatches(handle.db, [first!.uuid, second!.uuid]), before);
        assert.equal((await runCli(['--database-url', database.url, 'dbchk', '--equal'])).code, 0);

        await handle.db.deleteFrom('matches').where('uuid', '=', first!.uuid).execute();
        assert.deepEqual(
          (await attemptsOfMatches(handle.db, [first!.uuid, second!.uuid])).map((a) => a.match_uuid),
          [second!.uuid],
        );

        assert.equal((await migratorOf(handle, () => true).migrateDown()).error, undefined);
        assert.deepEqual(await keysOfAttempts(handle), { primaryKey: ['uuid'], indexes: ['attempts_match'] });
        assert.deepEqual(
          await attemptsOfMatches(handle.db, [second!.uuid]),
          before.filter((a) => a.match_uuid === second!.uuid),
        );
      } finally {
        await handle.close();
        await database.cleanup();
      }
    });
  });
}
