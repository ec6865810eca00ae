/**
 * The two aggregate queries behind the queue gauges, against real rows on every database.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { CompiledQuery, createQueryId, type Kysely, type RootOperationNode } from 'kysely';
import { logEvent, pendingMatch } from '../../src/db/stores/events.js';
import { oldestPendingCreated, queueDepth } from '../../src/db/stores/queue-stats.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { Database, MatchState } from '../../src/db/tables.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

for (const backend of testBackends()) {
  describeOn(backend, `queue statistics (${backend.name})`, () => {
    async function withRows(
      rows: Array<{ state: MatchState; created: number }>,
      check: (db: Awaited<ReturnType<typeof openTestDatabase>>['handle']['db']) => Promise<void>,
    ) {
      const t = await openTestDatabase(backend);
      try {
        const subscription = subscriptionRow();
        await insertSubscription(t.handle.db, t.handle.capabilities, subscription);
        for (const [i, row] of rows.entries()) {
          const eventUuid = randomUUID();
          const event = {
            uuid: eventUuid,
            source: '/q',
            event_id: `e${i}`,
            type: 't',
            spec_version: '1.0',
            body: '{}',
            received: row.created,
          };
          await logEvent(t.handle.db, event, [{ ...pendingMatch(eventUuid, subscription, row.created), state: row.state }]);
        }
        await check(t.handle.db);
      } finally {
        await t.close();
      }
    }

    it('counts the rows of each unfinished state, and finds the oldest of each; finished rows do not count', async () => {
      await withRows(
        [
          { state: 'policy', created: 5_000 },
          { state: 'policy', created: 3_000 },
          { state: 'deliver', created: 9_000 },
          { state: 'deliver', created: 7_000 },
          { state: 'deliver', created: 8_000 },
          // Older than all of them, but done.
          { state: 'delivered', created: 1_000 },
          { state: 'denied', created: 1_001 },
          { state: 'failed', created: 1_002 },
          { state: 'cancelled', created: 1_003 },
        ],
        async (db) => {
          assert.deepEqual(
            [...(await queueDepth(db))],
            [
              ['policy', 2],
              ['deliver', 3],
            ],
          );
          assert.deepEqual(
            [...(await oldestPendingCreated(db))],
            [
              ['policy', 3_000],
              ['deliver', 7_000],
            ],
          );
        },
      );
    });

    it('reports an empty queue as zero rows and no oldest row', async () => {
      await withRows([{ state: 'delivered', created: 1_000 }], async (db) => {
        assert.deepEqual(
          [...(await queueDepth(db))],
          [
            ['policy', 0],
            ['deliver', 0],
          ],
        );
        assert.deepEqual(
          [...(await oldestPendingCreated(db))],
          [
            ['policy', undefined],
            ['deliver', undefined],
          ],
        );
      });
    });

    if (backend.name === 'sqlite') {
      it('reads both from the (state, due) index, never scanning the table; the depth from the index alone', async () => {
        await withRows([], async (db) => {
          const plans = async (run: (db: Kysely<Database>) => Promise<unknown>) => {
            const nodes: RootOperationNode[] = [];
            await run(
              db.withPlugin({
                transformQuery: ({ node }) => {
                  nodes.push(node);
                  return node;
                },
                transformResult: async ({ result }) => result,
              }),
            );
            const compiled = db.getExecutor().compileQuery(nodes[0]!, createQueryId());
            const plan = await db.executeQuery<{ detail: string }>(
              CompiledQuery.raw(`explain query plan ${compiled.sql}`, [...compiled.parameters]),
            );
            return plan.rows.map((r) => r.detail).join('\n');
          };
          const depth = await plans(queueDepth);
          assert.match(depth, /USING COVERING INDEX matches_state_due/);
          const oldest = await plans(oldestPendingCreated);
          assert.match(oldest, /USING INDEX matches_state_due/);
          assert.doesNotMatch(`${depth}\n${oldest}`, /SCAN matches/);
        });
      });
    }
  });
}
