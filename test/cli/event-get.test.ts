import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { type EventRow, logEvent, type MatchRow } from '../../src/db/stores/events.js';
import { recordAttempts } from '../../src/db/stores/matches.js';
import { insertSubscription } from '../../src/db/stores/subscriptions.js';
import { parseCliDate } from '../../src/time/clock.js';
import { describeOn, openTestDatabase, type TestBackend, testBackends } from '../support/database.js';
import { runCli } from '../support/processes.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { matchRow } from '../support/match-row.js';

const SUBSCRIPTION = '00000000-0000-0000-0000-0000000000a1';
const HOUR_US = 3600 * 1_000_000;
const at = (date: string) => parseCliDate(date)!;

function event(received: number, uuid: string = randomUUID()): EventRow {
  const body = { specversion: '1.0', id: uuid, source: '/facility', type: 'org.example.upload', data: { project: 1234 } };
  return { uuid, source: '/facility', event_id: uuid, type: body.type, spec_version: '1.0', body: JSON.stringify(body), received };
}

function match(eventUuid: string, created: number, state: MatchRow['state'], policy: number | null, target: number | null): MatchRow {
  return matchRow({ event_uuid: eventUuid, subscription_uuid: SUBSCRIPTION, state, policy_code: policy, target_code: target, created });
}

type Seeded = Awaited<ReturnType<typeof openTestDatabase>>;

async function withLog(backend: TestBackend, body: (t: Seeded, cli: (...args: string[]) => ReturnType<typeof runCli>) => Promise<void>) {
  const t = await openTestDatabase(backend);
  try {
    await insertSubscription(
      t.handle.db,
      t.handle.capabilities,
      subscriptionRow({ uuid: SUBSCRIPTION, name: 'uploads', jsonpath: '$.data' }),
    );
    await body(t, (...args) => runCli(['--database-url', t.database.url, ...args]));
  } finally {
    await t.close();
  }
}

const printedEvents = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('Event - '))
    .map((l) => l.slice('Event - '.length));

for (const backend of testBackends()) {
  describeOn(backend, `svc-notifications-cmd eventget (${backend.name})`, () => {
    it('prints the event, its JSON on one line, and one ELM line per match with - for unknown codes', async () => {
      await withLog(backend, async ({ handle }, cli) => {
        const e = event(at('2024-03-01 12:00:00'));
        const done = match(e.uuid, e.received + 1, 'delivered', 200, 204);
        const waiting = match(e.uuid, e.received + 2, 'policy', null, null);
        const denied = match(e.uuid, e.received + 3, 'denied', 403, null);
        await logEvent(handle.db, e, [waiting, denied, done]);
        const result = await cli('eventget', e.uuid);
        assert.equal(result.code, 0, result.stderr);
        assert.equal(
          result.stdout,
          [
            `Event - ${e.uuid}`,
            e.body,
            `    ELM ${done.uuid} (2024-03-01T12:00:00.000001) policy 200 target 204`,
            `    ELM ${waiting.uuid} (2024-03-01T12:00:00.000002) policy - target -`,
            `    ELM ${denied.uuid} (2024-03-01T12:00:00.000003) policy 403 target -`,
            '',
          ].join('\n'),
        );
      });
    });

    it('by default prints the 10 most recent events of the last day, oldest first', async () => {
      await withLog(backend, async ({ handle }, cli) => {
        const now = Date.now() * 1000;
        const tooOld = event(now - 25 * HOUR_US);
        await logEvent(handle.db, tooOld, []);
        const recent: EventRow[] = [];
        for (let i = 12; i >= 1; i--) recent.push(event(now - i * HOUR_US));
        for (const e of [...recent].reverse()) await logEvent(handle.db, e, [match(e.uuid, e.received, 'delivered', 200, 200)]);
        const result = await cli('eventget');
        assert.equal(result.code, 0, result.stderr);
        assert.deepEqual(
          printedEvents(result.stdout),
          recent.slice(2).map((e) => e.uuid),
        );
        assert.equal(result.stdout.split('\n').filter((l) => l.startsWith('    ELM ')).length, 10);

        const three = await cli('eventget', '--limit', '3');
        assert.deepEqual(
          printedEvents(three.stdout),
          recent.slice(9).map((e) => e.uuid),
        );
        const none = await cli('eventget', '--limit=0');
        assert.equal(none.code, 0);
        assert.equal(none.stdout, '');
        const all = await cli('eventget', '--limit', '100');
        assert.deepEqual(
          printedEvents(all.stdout),
          recent.map((e) => e.uuid),
          'nothing older than a day',
        );
      });
    });

    it('--start-date and --end-date choose the window (both ends included); --limit keeps its most recent', async () => {
      await withLog(backend, async ({ handle }, cli) => {
        const events = [
          '2024-01-01 09:59:59',
          '2024-01-01 10:00:00',
          '2024-01-01 11:00:00',
          '2024-01-01 12:00:00',
          '2024-01-01 12:00:01',
        ].map((date) => event(at(date)));
        for (const e of events) await logEvent(handle.db, e, []);
        const window = ['--start-date', '2024-01-01 10:00:00', '--end-date', '2024-01-01 12:00:00'];
        assert.deepEqual(
          printedEvents((await cli('eventget', ...window)).stdout),
          events.slice(1, 4).map((e) => e.uuid),
        );
        assert.deepEqual(
          printedEvents((await cli('eventget', ...window, '--limit', '2')).stdout),
          events.slice(2, 4).map((e) => e.uuid),
        );
        const dayBeforeEnd = await cli('eventget', '--end-date', '2024-01-01 11:00:00');
        assert.deepEqual(
          printedEvents(dayBeforeEnd.stdout),
          events.slice(0, 3).map((e) => e.uuid),
          'the day before --end-date',
        );
      });
    });

    it('pages through more events than one query holds, in order, ties broken by uuid', async () => {
      await withLog(backend, async ({ handle }, cli) => {
        const base = at('2024-02-01 00:00:00');
        // Three events per microsecond, so page boundaries fall inside runs of equal `received`.
        const events = Array.from({ length: 1230 }, (_, i) => event(base + Math.floor(i / 3)));
        for (let i = 0; i < events.length; i += 400)
          await handle.db
            .insertInto('events')
            .values(events.slice(i, i + 400))
            .execute();
        const expected = [...events].sort((a, b) => a.received - b.received || (a.uuid < b.uuid ? -1 : 1)).slice(-1100);
        const result = await cli('eventget', '--start-date', '2024-02-01 00:00:00', '--end-date', '2024-02-01 00:00:01', '--limit', '1100');
        assert.equal(result.code, 0, result.stderr);
        assert.deepEqual(
          printedEvents(result.stdout),
          expected.map((e) => e.uuid),
        );
      });
    });

    it('--json: one object per event and line, with matches and their attempts', async () => {
      await withLog(backend, async ({ handle }, cli) => {
        const e = event(at('2024-03-01 12:00:00'));
        const m = match(e.uuid, e.received + 5, 'deliver', 200, 503);
        await logEvent(handle.db, e, [m]);
        await recordAttempts(handle.db, handle.capabilities, [
          { matchUuid: m.uuid, stage: 'deliver', at: e.received + 9, status: 503, error: null, durationMs: 12 },
        ]);
        const bare = event(at('2024-03-01 12:00:01'));
        await logEvent(handle.db, bare, []);
        const result = await cli('eventget', '--json', '--start-date', '2024-03-01 00:00:00', '--end-date', '2024-03-02 00:00:00');
        assert.equal(result.code, 0, result.stderr);
        const lines = result.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as unknown);
        assert.deepEqual(lines, [
          {
            uuid: e.uuid,
            received: '2024-03-01T12:00:00.000000',
            event: JSON.parse(e.body),
            matches: [
              {
                uuid: m.uuid,
                created: '2024-03-01T12:00:00.000005',
                subscription: SUBSCRIPTION,
                user: 'alice',
                state: 'deliver',
                policy: 200,
                target: 503,
                attempts: [{ at: '2024-03-01T12:00:00.000009', stage: 'deliver', status: 503, error: null, duration_ms: 12 }],
              },
            ],
          },
          { uuid: bare.uuid, received: '2024-03-01T12:00:01.000000', event: JSON.parse(bare.body), matches: [] },
        ]);
      });
    });

    it('prints an event as the producer wrote it, on one line: numbers keep their digits, strings their spaces', async () => {
      await withLog(backend, async ({ handle }, cli) => {
        const uuid = randomUUID();
        const body =
          '{\n  "specversion": "1.0", "id": "exact",\n\t"source": "/facility", "type": "t",\r\n  "data": {"big": 12345678901234567890, "f": 1.50, "e": 1e2, "text": "a  \\"b\\"  c"}\n}';
        await logEvent(handle.db, { ...event(at('2024-03-01 12:00:00'), uuid), body }, []);
        const compact =
          '{"specversion":"1.0","id":"exact","source":"/facility","type":"t","data":{"big":12345678901234567890,"f":1.50,"e":1e2,"text":"a  \\"b\\"  c"}}';
        const text = await cli('eventget', uuid);
        assert.equal(text.code, 0, text.stderr);
        assert.equal(text.stdout.split('\n')[1], compact);
        const json = await cli('eventget', '--json', uuid);
        assert.equal(json.code, 0, json.stderr);
        assert.ok(json.stdout.includes(`,"event":${compact},"matches":[]}`), json.stdout);
        assert.equal((JSON.parse(json.stdout) as { uuid: string }).uuid, uuid);
      });
    });

    it('uuids: those events in the order given; an unknown one is named on stderr, exit 1', async () => {
      await withLog(backend, async ({ handle }, cli) => {
        const [first, second] = [event(at('2024-01-01 00:00:00')), event(at('2024-01-02 00:00:00'))];
        for (const e of [first!, second!]) await logEvent(handle.db, e, []);
        const both = await cli('eventget', second!.uuid, first!.uuid.toUpperCase());
        assert.equal(both.code, 0, both.stderr);
        assert.deepEqual(printedEvents(both.stdout), [second!.uuid, first!.uuid]);
        const unknown = randomUUID();
        const result = await cli('eventget', first!.uuid, unknown);
        assert.equal(result.code, 1);
        assert.deepEqual(printedEvents(result.stdout), [first!.uuid]);
        assert.equal(result.stderr.trim(), `eventget: no event ${unknown} in the log`);
      });
    });
  });
}
