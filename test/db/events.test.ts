import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Kysely } from 'kysely';
import { type EventRow, type EventToLog, type LoggedEvent, logEvents, logEventsInOneStatement, pendingMatch } from '../../src/db/events.js';
import { insertSubscriptions } from '../../src/db/subscriptions.js';
import type { Database } from '../../src/db/tables.js';
import { timeOrderedUuid } from '../../src/uuid.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { subscriptionRow } from '../support/subscription-row.js';

type LogEvents = (db: Kysely<Database>, entries: readonly EventToLog[]) => Promise<LoggedEvent[]>;

/** Bodies as they may arrive: what an array literal or a parameter could mangle. */
const AWKWARD_BODIES = ['{"a":"say \\"hi\\""}', '{"path":"C:\\\\data"}', '{"set":"{a,b}"}', 'NULL', '', '{"snow":"☃ 𝄞"}'];

const event = (id: string, body = `{"id":"${id}"}`): EventRow => ({
  uuid: timeOrderedUuid(),
  source: '/test',
  event_id: id,
  type: 't',
  spec_version: '1.0',
  body,
  received: 1_700_000_000_000_000,
});

for (const backend of testBackends()) {
  describeOn(backend, `logging events (${backend.name})`, () => {
    const writers = async (capabilities: { dataModifyingWith: boolean }): Promise<Array<[string, LogEvents]>> => [
      ['logEvents', logEvents],
      ...(capabilities.dataModifyingWith ? [['logEventsInOneStatement', logEventsInOneStatement] as [string, LogEvents]] : []),
    ];

    it('writes each event and its match rows as given, every column, bodies unchanged', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const subscription = subscriptionRow();
        await insertSubscriptions(handle.db, handle.capabilities, [subscription]);
        for (const [name, log] of await writers(handle.capabilities)) {
          const events = AWKWARD_BODIES.map((body, i) => event(`${name}-${i}`, body));
          const entries = events.map((e, i) => {
            const leased = { ...pendingMatch(e.uuid, subscription, 5), locked_by: 'holder', locked_until: 99, policy_code: i, attempts: 2 };
            return { event: e, matches: i % 2 === 0 ? [pendingMatch(e.uuid, subscription, 7), leased] : [] };
          });
          const logged = await handle.write((tx) => log(tx, entries));
          assert.deepEqual(
            logged,
            entries.map((e) => ({ uuid: e.event.uuid, matches: e.matches.length, duplicate: false })),
            name,
          );
          const stored = await handle.db
            .selectFrom('events')
            .selectAll()
            .where('event_id', 'like', `${name}-%`)
            .orderBy('event_id')
            .execute();
          assert.deepEqual(stored, events, name);
          const matches = await handle.db
            .selectFrom('matches')
            .selectAll()
            .where(
              'event_uuid',
              'in',
              events.map((e) => e.uuid),
            )
            .orderBy('uuid')
            .execute();
          assert.deepEqual(
            matches,
            entries.flatMap((e) => e.matches).sort((a, b) => a.uuid.localeCompare(b.uuid)),
            name,
          );
        }
      } finally {
        await close();
      }
    });

    it('logs an event seen before, or twice in one call, once: the duplicate answers with the first, and writes no matches', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const subscription = subscriptionRow();
        await insertSubscriptions(handle.db, handle.capabilities, [subscription]);
        for (const [name, log] of await writers(handle.capabilities)) {
          const first = event(`${name}-first`);
          await handle.write((tx) => log(tx, [{ event: first, matches: [pendingMatch(first.uuid, subscription, 1)] }]));
          const again = { ...event(`${name}-first`), uuid: timeOrderedUuid() };
          const twice = [event(`${name}-twice`), event(`${name}-twice`)];
          const logged = await handle.write((tx) =>
            log(
              tx,
              [again, ...twice].map((e) => ({
                event: e,
                matches: [pendingMatch(e.uuid, subscription, 2), pendingMatch(e.uuid, subscription, 2)],
              })),
            ),
          );
          assert.deepEqual(
            logged,
            [
              { uuid: first.uuid, matches: 1, duplicate: true },
              { uuid: twice[0]!.uuid, matches: 2, duplicate: false },
              { uuid: twice[0]!.uuid, matches: 2, duplicate: true },
            ],
            name,
          );
          const rows = await handle.db
            .selectFrom('matches')
            .select('event_uuid')
            .where('event_uuid', 'in', [again.uuid, twice[1]!.uuid])
            .execute();
          assert.deepEqual(rows, [], name);
        }
      } finally {
        await close();
      }
    });

    it('logs more events and matches at once than one multi-row statement takes', async () => {
      const { handle, close } = await openTestDatabase(backend);
      try {
        const subscriptions = [subscriptionRow(), subscriptionRow(), subscriptionRow()];
        await insertSubscriptions(handle.db, handle.capabilities, subscriptions);
        for (const [name, log] of await writers(handle.capabilities)) {
          const entries = Array.from({ length: 2_500 }, (_, i) => {
            const e = event(`${name}-${i}`);
            return { event: e, matches: subscriptions.map((s) => pendingMatch(e.uuid, s, 1)) };
          });
          const logged = await handle.write((tx) => log(tx, entries));
          assert.equal(logged.filter((l) => !l.duplicate && l.matches === 3).length, 2_500, name);
          const count = await handle.db
            .selectFrom('matches')
            .innerJoin('events', 'events.uuid', 'matches.event_uuid')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('events.event_id', 'like', `${name}-%`)
            .executeTakeFirstOrThrow();
          assert.equal(Number(count.n), 7_500, name);
        }
      } finally {
        await close();
      }
    });
  });
}
