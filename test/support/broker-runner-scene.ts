/**
 * The delivery runner's scene for broker destinations: a real database, a real HTTP target
 * client and broker publisher, and the broker behind a TCP proxy the test can stop, with the
 * clock in the test's hand (test/delivery/broker-runner*.test.ts).
 */
import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import { type DatabaseHandle } from '../../src/db/connect.js';
import { logEvent, pendingMatch } from '../../src/db/stores/events.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import type { MatchesTable, SubscriptionRow } from '../../src/db/tables.js';
import { type BrokerClient, createBrokerPublisher } from '../../src/delivery/broker-publisher.js';
import { createTargetClient, type TargetClient } from '../../src/delivery/target-client.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { openTestDatabase, type TestBackend } from './database.js';
import { subscriptionRow } from './subscription-row.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

export const NOW = 1_800_000_000_000_000;
export const SCHEDULE = { delaysMs: [60_000, 60_000], random: () => 0.5 };

export interface Scene {
  handle: DatabaseHandle;
  target: TargetClient;
  broker: BrokerClient;
  /** The broker, through a proxy the test can stop and start. */
  proxy: TcpProxy;
  now: number;
  clock: () => number;
  subscribe(targetUrl: string, fields?: Partial<SubscriptionRow>): Promise<SubscriptionRow>;
  queue(subscription: SubscriptionRow, count: number): Promise<MatchesTable[]>;
  read(uuid: string): Promise<MatchesTable>;
  subscription(uuid: string): Promise<SubscriptionRow>;
  attempts(uuid: string): Promise<Array<{ status: number | null; error: string | null }>>;
}

export async function scene(t: TestContext, backend: TestBackend, brokerPort: number): Promise<Scene> {
  const db = await openTestDatabase(backend);
  const guard = addressGuard({ allow: [], deny: [] });
  const target = createTargetClient({ timeoutMs: 2_000, connectionsPerOrigin: 4, guard });
  const broker = createBrokerPublisher({ timeoutMs: 2_000, guard });
  const proxy = await startTcpProxy(brokerPort);
  t.after(async () => {
    await Promise.all([target.close(), broker.close(), proxy.close()]);
    await db.close();
  });
  let events = 0;
  const s: Scene = {
    handle: db.handle,
    target,
    broker,
    proxy,
    now: NOW,
    clock: () => s.now,
    subscribe: async (targetUrl, fields = {}) => {
      const row = subscriptionRow({ target_url: targetUrl, ...fields });
      await insertSubscription(db.handle.db, db.handle.capabilities, row);
      return row;
    },
    queue: async (subscription, count) => {
      const rows: MatchesTable[] = [];
      for (let i = 0; i < count; i++) {
        const eventUuid = randomUUID();
        const id = `e${++events}`;
        const match = { ...pendingMatch(eventUuid, subscription, NOW - 1_000_000 + events), state: 'deliver' as const };
        const body = JSON.stringify({ specversion: '1.0', id, source: '/t', type: 't' });
        await logEvent(db.handle.db, { uuid: eventUuid, source: '/t', event_id: id, type: 't', spec_version: '1.0', body, received: 1 }, [
          match,
        ]);
        rows.push(match);
      }
      return rows;
    },
    read: (uuid) => db.handle.db.selectFrom('matches').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow(),
    subscription: (uuid) => db.handle.db.selectFrom('subscriptions').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow(),
    attempts: (uuid) =>
      db.handle.db.selectFrom('attempts').select(['status', 'error']).where('match_uuid', '=', uuid).orderBy('at').execute(),
  };
  return s;
}

export const states = async (s: Scene, rows: readonly MatchesTable[]) =>
  (await Promise.all(rows.map((r) => s.read(r.uuid)))).map((r) => r.state);
export const count = (values: readonly string[], value: string) => values.filter((v) => v === value).length;
