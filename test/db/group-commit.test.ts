import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { GroupCommit } from '../../src/db/group-commit.js';
import { DatabaseUnavailable } from '../../src/db/unavailable.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { Database, SubscriptionRow } from '../../src/db/tables.js';
import { describeOn, openTestDatabase, POSTGRES, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

/** A subscription known by its uuid, which is its name too. */
const row = (uuid: string): SubscriptionRow => subscriptionRow({ uuid, name: uuid, jsonpath: '$.a' });

const inTransaction =
  (db: Kysely<Database>) =>
  <T>(work: (tx: Kysely<Database>) => Promise<T>) =>
    db.transaction().execute(work);

/** Lets the event loop turn until `done`, for five seconds at most. */
async function turnsUntil(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  assert.ok(done(), 'the commit never asked for its sync');
}

for (const backend of testBackends()) {
  describeOn(backend, `group commit (${backend.name})`, () => {
    it('commits concurrent writes together and settles each with its own result', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const group = new GroupCommit(inTransaction(handle.db), 2);
        const ids = Array.from({ length: 1200 }, (_, i) => `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`);
        // Each write is handed the transaction it runs in: writes committed together share one.
        const writesPerTransaction = new Map<Kysely<Database>, number>();
        const results = await Promise.all(
          ids.map((id) =>
            group.run(async (tx) => {
              writesPerTransaction.set(tx, (writesPerTransaction.get(tx) ?? 0) + 1);
              await insertSubscription(tx, handle.capabilities, row(id));
              return id;
            }),
          ),
        );
        assert.deepEqual(results, ids);
        // Queued at once: two lanes take 500 each, and the first lane free takes the last 200.
        assert.deepEqual(
          [...writesPerTransaction.values()].sort((a, b) => b - a),
          [500, 500, 200],
        );
        const count = await handle.db
          .selectFrom('subscriptions')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(count.n), ids.length);
      } finally {
        await close();
      }
    });

    it("answers a commit's writers only once the commit is durable, and fails them when it cannot be", async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const syncs: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
        const log = { sync: () => new Promise<void>((resolve, reject) => syncs.push({ resolve, reject })), syncSoon: () => undefined };
        const group = new GroupCommit(inTransaction(handle.db), 1, log);
        let settled = false;
        const first = group
          .run((tx) => insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000001')))
          .finally(() => (settled = true));
        await turnsUntil(() => syncs.length === 1);
        // Committed (another connection sees it), but not yet said to be durable: not answered.
        const committed = await handle.db.selectFrom('subscriptions').select('uuid').execute();
        assert.equal(committed.length, 1);
        assert.equal(settled, false);
        syncs[0]!.resolve();
        await first;

        const second = group.run((tx) => insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000002')));
        await turnsUntil(() => syncs.length === 2);
        syncs[1]!.reject(new Error('disk gone'));
        await assert.rejects(second, /disk gone/);
      } finally {
        await close();
      }
    });

    it('answers writes that sync later at their commit, asking for a sync soon (failing them when it cannot); with any other write, after the sync', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        let syncs = 0;
        let soon = 0;
        let synced: () => void = () => undefined;
        const log = {
          sync: () => new Promise<void>((resolve) => ((synced = resolve), syncs++)),
          syncSoon: () => void soon++,
        };
        const group = new GroupCommit(inTransaction(handle.db), 1, log);
        const insert = (uuid: string) => (tx: Kysely<Database>) => insertSubscription(tx, handle.capabilities, row(uuid));
        await Promise.all([
          group.run(insert('00000000-0000-0000-0000-000000000001'), { syncLater: true }),
          group.run(insert('00000000-0000-0000-0000-000000000002'), { syncLater: true }),
        ]);
        assert.deepEqual({ syncs, soon }, { syncs: 0, soon: 1 });

        let settled = false;
        const mixed = Promise.all([
          group.run(insert('00000000-0000-0000-0000-000000000003'), { syncLater: true }),
          group.run(insert('00000000-0000-0000-0000-000000000004')),
        ]).finally(() => (settled = true));
        await turnsUntil(() => syncs === 1);
        assert.equal(settled, false);
        synced();
        await mixed;
        assert.deepEqual({ syncs, soon }, { syncs: 1, soon: 1 });

        const failed = new GroupCommit(inTransaction(handle.db), 1, {
          ...log,
          syncSoon: () => {
            throw new Error('log gone');
          },
        });
        await assert.rejects(failed.run(insert('00000000-0000-0000-0000-000000000005'), { syncLater: true }), /log gone/);
      } finally {
        await close();
      }
    });

    it('rejects a failing write alone; the others of its commit are kept', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const group = new GroupCommit(inTransaction(handle.db), 2);
        const outcomes = await Promise.allSettled([
          group.run((tx) => insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000001'))),
          group.run((tx) => insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000001'))), // duplicate key
          group.run((tx) => insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000002'))),
        ]);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['fulfilled', 'rejected', 'fulfilled'],
        );
        const rows = await handle.db.selectFrom('subscriptions').select('uuid').orderBy('uuid').execute();
        assert.deepEqual(
          rows.map((r) => r.uuid),
          ['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002'],
        );
      } finally {
        await close();
      }
    });

    it('runs each write of a commit again alone when one fails midway: nothing of the failed one stays', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const group = new GroupCommit(inTransaction(handle.db), 1);
        let firstRuns = 0;
        const outcomes = await Promise.allSettled([
          group.run(async (tx) => {
            firstRuns++;
            await insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000002'));
            return 'first';
          }),
          group.run(async (tx) => {
            await insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000001'));
            throw new Error('failed after its first statement');
          }),
        ]);
        assert.deepEqual(outcomes[0], { status: 'fulfilled', value: 'first' });
        assert.equal(outcomes[1]!.status, 'rejected');
        assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /failed after its first statement/);
        // Once in the shared transaction, rolled back with it, and once alone.
        assert.equal(firstRuns, 2);
        const rows = await handle.db.selectFrom('subscriptions').select('uuid').execute();
        assert.deepEqual(
          rows.map((r) => r.uuid),
          ['00000000-0000-0000-0000-000000000002'],
        );
      } finally {
        await close();
      }
    });

    it('runs a one-statement write that commits alone outside any transaction, where there is a statement runner', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const group = new GroupCommit(inTransaction(handle.db), 1, undefined, (work) => work(handle.db));
        // Not one statement after all: what it wrote before failing stays, as no transaction holds it.
        const write = async (tx: Kysely<Database>, uuid: string) => {
          await insertSubscription(tx, handle.capabilities, row(uuid));
          throw new Error('failed after its first statement');
        };
        await assert.rejects(group.run((tx) => write(tx, '00000000-0000-0000-0000-000000000001'), { oneStatement: true }));
        await assert.rejects(group.run((tx) => write(tx, '00000000-0000-0000-0000-000000000002')));
        const rows = await handle.db.selectFrom('subscriptions').select('uuid').execute();
        assert.deepEqual(
          rows.map((r) => r.uuid),
          ['00000000-0000-0000-0000-000000000001'],
        );
      } finally {
        await close();
      }
    });

    it('commits a one-statement write in the transaction of the writes of its moment', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const group = new GroupCommit(inTransaction(handle.db), 1, undefined, (work) => work(handle.db));
        let oneStatementRuns = 0;
        const outcomes = await Promise.allSettled([
          group.run(
            async (tx) => {
              oneStatementRuns++;
              await insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000001'));
            },
            { oneStatement: true },
          ),
          group.run(async () => {
            throw new Error('fails its commit');
          }),
        ]);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['fulfilled', 'rejected'],
        );
        // Rolled back with the failed write's transaction, then committed alone.
        assert.equal(oneStatementRuns, 2);
        assert.equal((await handle.db.selectFrom('subscriptions').select('uuid').execute()).length, 1);
      } finally {
        await close();
      }
    });

    it('fails the whole commit, without running any write again, when the database stops answering', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const group = new GroupCommit(inTransaction(handle.db), 1);
        let runs = 0;
        const outcomes = await Promise.allSettled([
          group.run(async (tx) => {
            runs++;
            await insertSubscription(tx, handle.capabilities, row('00000000-0000-0000-0000-000000000001'));
          }),
          group.run(async () => {
            runs++;
            throw new DatabaseUnavailable('no answer from the database');
          }),
        ]);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['rejected', 'rejected'],
        );
        assert.equal(runs, 2);
        assert.equal((await handle.db.selectFrom('subscriptions').select('uuid').execute()).length, 0);
      } finally {
        await close();
      }
    });
  });
}

describeOn(POSTGRES, 'group commit (postgres): deadlocks', () => {
  it('runs again a transaction PostgreSQL rolled back to break a deadlock, so that both writers succeed', async () => {
    const { handle, close } = await openTestDatabase(POSTGRES);
    try {
      const [a, b] = ['00000000-0000-0000-0000-00000000000a', '00000000-0000-0000-0000-00000000000b'];
      for (const uuid of [a, b]) await handle.write((tx) => insertSubscription(tx, handle.capabilities, row(uuid)));
      // Two lanes, each locking the two rows in the opposite order, each waiting for the other
      // to hold its first row: one of them is the deadlock's victim.
      const group = new GroupCommit(inTransaction(handle.db), 2);
      let holding = 0;
      let tries = 0;
      const bothHold = async () => {
        holding++;
        while (holding < 2 && tries <= 2) await new Promise((r) => setTimeout(r, 10));
      };
      const lockInOrder = (first: string, second: string) => async (tx: Kysely<Database>) => {
        tries++;
        await tx
          .updateTable('subscriptions')
          .set({ name: `by ${first}` })
          .where('uuid', '=', first)
          .execute();
        await bothHold();
        await tx
          .updateTable('subscriptions')
          .set({ name: `by ${first}` })
          .where('uuid', '=', second)
          .execute();
        return first;
      };
      const settled = await Promise.allSettled([
        group.run(lockInOrder(a, b)),
        new Promise((r) => setImmediate(r)).then(() => group.run(lockInOrder(b, a))),
      ]);
      assert.deepEqual(
        settled.map((s) => s.status),
        ['fulfilled', 'fulfilled'],
        JSON.stringify(settled.map((s) => (s.status === 'rejected' ? String(s.reason) : s.value))),
      );
      assert.equal(tries, 3, 'the victim ran again once');
    } finally {
      await close();
    }
  });
});
