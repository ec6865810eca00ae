/**
 * The SQLite thread (src/db/sqlite-thread.ts): statements and operations cross to the thread
 * that owns the connection; errors come back with SQLite's codes; a transaction the main thread
 * holds open keeps the thread's own group commit waiting; opening fails where the caller is.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { openDatabase } from '../../src/db/connect.js';
import { pendingMatch } from '../../src/db/stores/events.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { Database } from '../../src/db/tables.js';
import { openTestDatabase, SQLITE } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

const SUBSCRIPTION = '00000000-0000-0000-0000-000000000001';
const event = (uuid: string) => ({
  uuid,
  source: '/thread',
  event_id: uuid,
  type: 't',
  spec_version: '1.0',
  body: '{"a":1}',
  received: 1,
  traceparent: null,
});

describe('the SQLite thread', () => {
  it('answers statements with their rows, and errors with SQLite’s code', async () => {
    const { handle, close } = await openTestDatabase(SQLITE);
    try {
      const { rows } = await sql<{ n: number }>`select 40 + 2 as n`.execute(handle.db);
      assert.deepEqual(rows, [{ n: 42 }]);
      await assert.rejects(sql`select * from no_such_table`.execute(handle.db), { code: 'SQLITE_ERROR', message: /no such table/ });
      await handle.write((tx) =>
        insertSubscription(tx, handle.capabilities, subscriptionRow({ uuid: SUBSCRIPTION, name: 's', jsonpath: '$' })),
      );
      await assert.rejects(
        handle.write((tx) =>
          insertSubscription(tx, handle.capabilities, subscriptionRow({ uuid: SUBSCRIPTION, name: 's', jsonpath: '$' })),
        ),
        { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' },
      );
    } finally {
      await close();
    }
  });

  it('runs an operation in the thread’s own group commit, and its rows are there for the main thread to read', async () => {
    const { handle, close } = await openTestDatabase(SQLITE);
    try {
      await handle.write((tx) =>
        insertSubscription(tx, handle.capabilities, subscriptionRow({ uuid: SUBSCRIPTION, name: 's', jsonpath: '$' })),
      );
      const uuids = ['00000000-0000-0000-0000-0000000000e1', '00000000-0000-0000-0000-0000000000e2'];
      const logged = await Promise.all(
        uuids.map((uuid) =>
          handle.perform('logEvents', [{ event: event(uuid), matches: [pendingMatch(uuid, { uuid: SUBSCRIPTION, owner: 'alice' }, 1)] }]),
        ),
      );
      assert.deepEqual(
        logged.map(([entry]) => entry),
        uuids.map((uuid) => ({ uuid, matches: 1, duplicate: false })),
      );
      const again = await handle.perform('logEvents', [{ event: event(uuids[0]!), matches: [] }]);
      assert.deepEqual(again, [{ uuid: uuids[0], matches: 1, duplicate: true }]);
      const claimed = await handle.perform('claim', { stage: 'policy', lease: { holder: 'h', now: 2, durationUs: 1_000_000 }, limit: 10 });
      assert.deepEqual(claimed.map((row) => row.event_uuid).sort(), uuids);
    } finally {
      await close();
    }
  });

  it('keeps its group commit waiting while a transaction of the main thread is open', async () => {
    const { handle, close } = await openTestDatabase(SQLITE);
    try {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let begun!: (tx: Kysely<Database>) => void;
      const inTransaction = new Promise<Kysely<Database>>((resolve) => (begun = resolve));
      const main = handle.write(async (tx) => {
        await insertSubscription(tx, handle.capabilities, subscriptionRow({ uuid: SUBSCRIPTION, name: 's', jsonpath: '$' }));
        begun(tx);
        await held;
      });
      const tx = await inTransaction;
      const uuid = '00000000-0000-0000-0000-0000000000e3';
      let operationSettled = false;
      const operation = handle.perform('logEvents', [
        { event: event(uuid), matches: [pendingMatch(uuid, { uuid: SUBSCRIPTION, owner: 'alice' }, 1)] },
      ]);
      const settled = () => void (operationSettled = true);
      operation.then(settled, settled);
      // The operation's transaction cannot begin inside the main thread's: it waits for its end.
      // The barrier, instead of a pause: two statements in the main thread's transaction, one
      // after the other, each sent once the main thread's turn has ended (an operation crosses to
      // the thread at the end of its turn, a statement at once). The thread takes what it is sent
      // in order, and answers a turn's statements after the group commit it scheduled in that
      // turn has begun: the first answer comes after the operation's commit began (behind the
      // gate, it waits), the second after anything that commit answered meanwhile. Then the
      // operation has not settled, and its event is not on the connection it writes to. (Which
      // answer reaches the main thread first after the release is not part of it: each commit
      // is answered once the log is synced, and the two syncs may be one.)
      let seen: unknown[] = [];
      for (let round = 0; round < 2; round++) {
        await new Promise((resolve) => setImmediate(resolve));
        seen = (await sql`select uuid from events where uuid = ${uuid}`.execute(tx)).rows;
      }
      assert.equal(operationSettled, false, 'the operation settled while the main thread held a transaction');
      assert.deepEqual(seen, [], "the operation wrote inside the main thread's transaction");
      release();
      await main;
      assert.deepEqual(await operation, [{ uuid, matches: 1, duplicate: false }]);
    } finally {
      await close();
    }
  });

  it('throws where the database is opened when it cannot be', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sqlite-thread-'));
    try {
      assert.throws(() => openDatabase(`sqlite:${join(dir, 'missing', 'db.sqlite3')}`), /directory does not exist/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses statements once closed', async () => {
    const { handle, database } = await openTestDatabase(SQLITE);
    await handle.close();
    await assert.rejects(sql`select 1`.execute(handle.db), /destroyed/);
    await assert.rejects(handle.perform('claim', { stage: 'policy', lease: { holder: 'h', now: 2, durationUs: 1 }, limit: 1 }), /closed/);
    await database.cleanup();
  });
});
