/**
 * The delivery runner's kept subscriptions, over the real table: read once, replaced by the
 * writes it hears of, and never overwritten by a read older than one of them.
 */
import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { insertSubscription, subscriptionsByUuid } from '../../src/db/stores/subscriptions.js';
import type { SubscriptionRow } from '../../src/db/tables.js';
import { SubscriptionCache } from '../../src/delivery/subscription-cache.js';
import { describeOn, openTestDatabase, type TestBackend, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

async function scene(t: TestContext, backend: TestBackend, count: number) {
  const db = await openTestDatabase(backend);
  t.after(() => db.close());
  const rows: SubscriptionRow[] = [];
  for (let i = 0; i < count; i++) {
    const row = subscriptionRow({ target_url: `http://127.0.0.1:9/${i}` });
    await insertSubscription(db.handle.db, db.handle.capabilities, row);
    rows.push(row);
  }
  /** The uuids each read asked for, in order. */
  const reads: string[][] = [];
  const read = (uuids: readonly string[]) => {
    reads.push([...uuids]);
    return subscriptionsByUuid(db.handle.db, uuids);
  };
  const moveTarget = async (row: SubscriptionRow, url: string): Promise<SubscriptionRow> => {
    await db.handle.db.updateTable('subscriptions').set({ target_url: url, updated: 2 }).where('uuid', '=', row.uuid).execute();
    return { ...row, target_url: url, updated: 2 };
  };
  return { rows, reads, read, moveTarget };
}

for (const backend of testBackends()) {
  describeOn(backend, `subscription cache (${backend.name})`, () => {
    it('reads only the subscriptions it does not keep, once each however often they are asked for', async (t) => {
      const { rows, reads, read } = await scene(t, backend, 3);
      const cache = new SubscriptionCache(read, 100);
      const [a, b, c] = rows.map((r) => r.uuid) as [string, string, string];

      const first = await cache.get([a, a, b]);
      assert.deepEqual([...first.keys()].sort(), [a, b].sort());
      const second = await cache.get([b, c, a]);
      assert.deepEqual([...second.keys()].sort(), [a, b, c].sort());
      assert.equal(second.get(c)?.target_url, 'http://127.0.0.1:9/2');
      assert.deepEqual(reads, [[a, b], [c]]);
      await cache.get([c, b]);
      assert.equal(reads.length, 2, 'all kept');
    });

    it('a subscription that does not exist is left out, and asked for again next time', async (t) => {
      const { rows, reads, read } = await scene(t, backend, 1);
      const cache = new SubscriptionCache(read, 100);
      const missing = '00000000-0000-4000-8000-000000000000';
      assert.deepEqual([...(await cache.get([rows[0]!.uuid, missing])).keys()], [rows[0]!.uuid]);
      await cache.get([missing]);
      assert.deepEqual(reads, [[rows[0]!.uuid, missing], [missing]]);
    });

    it('a write it hears of replaces the row kept; a deletion forgets it', async (t) => {
      const { rows, reads, read, moveTarget } = await scene(t, backend, 2);
      const cache = new SubscriptionCache(read, 100);
      const [a, b] = rows as [SubscriptionRow, SubscriptionRow];
      await cache.get([a.uuid, b.uuid]);

      cache.changed({ kind: 'upsert', row: await moveTarget(a, 'http://127.0.0.1:9/moved') });
      assert.equal((await cache.get([a.uuid])).get(a.uuid)?.target_url, 'http://127.0.0.1:9/moved');
      cache.changed({ kind: 'delete', uuid: b.uuid });
      await cache.get([a.uuid, b.uuid]);
      assert.deepEqual(reads.slice(1), [[b.uuid]], 'only the forgotten one read again');
    });

    it('a read under way when a write is heard of keeps nothing: it may be older than the write', async (t) => {
      const { rows, reads, read, moveTarget } = await scene(t, backend, 1);
      const row = rows[0]!;
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let readFinished!: () => void;
      const finished = new Promise<void>((resolve) => (readFinished = resolve));
      let holdNext = true;
      const cache = new SubscriptionCache(async (uuids) => {
        const found = await read(uuids);
        if (holdNext) {
          holdNext = false;
          readFinished();
          await held;
        }
        return found;
      }, 100);

      const older = cache.get([row.uuid]);
      await finished;
      cache.changed({ kind: 'upsert', row: await moveTarget(row, 'http://127.0.0.1:9/moved') });
      release();
      assert.equal((await older).get(row.uuid)?.target_url, 'http://127.0.0.1:9/0', 'read before the write');
      assert.equal((await cache.get([row.uuid])).get(row.uuid)?.target_url, 'http://127.0.0.1:9/moved');
      assert.equal(reads.length, 2, 'read again');
    });

    it('keeps at most its limit, forgetting the one used longest ago', async (t) => {
      const { rows, reads, read } = await scene(t, backend, 3);
      const cache = new SubscriptionCache(read, 2);
      const [a, b, c] = rows.map((r) => r.uuid) as [string, string, string];
      await cache.get([a, b]);
      await cache.get([a]);
      await cache.get([c]);
      await cache.get([a, c]);
      await cache.get([b]);
      assert.deepEqual(reads, [[a, b], [c], [b]], 'b, used longest ago, was the one forgotten');
    });
  });
}
