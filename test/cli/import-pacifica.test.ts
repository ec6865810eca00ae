/**
 * `svc-notifications-cmd import-pacifica` from each kind of the original's database into each
 * of this service's, checked as users and operators would see the result: through the API
 * (records, the expression tried on an event, the delivery history) and `eventget --json`.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Keyring } from '../../src/config/keyring.js';
import { subscriptionsByUuid } from '../../src/db/stores/subscriptions.js';
import { startApiApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { facilityEventText } from '../support/fixtures.js';
import { type OriginalDatabaseFixture, originalSources } from '../support/original-service.js';
import { runCli } from '../support/processes.js';

const KEY = randomBytes(32);
const SECRET_KEY = KEY.toString('base64');

const SIZES = '3a0e8c1e-5f0b-4c47-9d0e-1b2c3d4e5f01';
const DELETED = '3a0e8c1e-5f0b-4c47-9d0e-1b2c3d4e5f02';
const DISABLED = '3a0e8c1e-5f0b-4c47-9d0e-1b2c3d4e5f03';
const BROKEN = '3a0e8c1e-5f0b-4c47-9d0e-1b2c3d4e5f04';
const METADATA = '3a0e8c1e-5f0b-4c47-9d0e-1b2c3d4e5f05';
const CREDENTIALS = '3a0e8c1e-5f0b-4c47-9d0e-1b2c3d4e5f06';
const RELATIVE = '3a0e8c1e-5f0b-4c47-9d0e-1b2c3d4e5f07';
const E1 = '9b1d2c3e-0000-4000-8000-00000000e001';
const E2 = '9b1d2c3e-0000-4000-8000-00000000e002';
const E3 = '9b1d2c3e-0000-4000-8000-00000000e003';
const M = (n: number) => `9b1d2c3e-0000-4000-8000-0000000000m${n}`.replace('m', 'a');

// Python's json.dumps, as the original wrote the events it received.
const E2_TEXT =
  '{"specversion": "1.0", "id": "x-1", "source": "/pacifica", "type": "org.pacifica.test", "data": [{"size": 500, "name": "big"}]}';
const E3_TEXT =
  '{"specversion": "1.0", "id": "x-1", "source": "/pacifica", "type": "org.pacifica.test", "data": [{"size": 7, "name": "again"}]}';

async function fill(original: OriginalDatabaseFixture): Promise<void> {
  const common = { target_url: 'http://127.0.0.1:9/hook', created: '2020-01-15 10:00:00.123456', updated: '2020-01-16 11:00:00.5' };
  await original.addSubscriptions([
    {
      ...common,
      uuid: SIZES,
      name: 'Large files',
      user: 'alice',
      jsonpath: '$.data[*][?(@.size > 100)].name',
      auth: '{"type": "basic", "basic": {"username": "u", "password": "p"}}',
      extensions: '{"facility": "emsl"}',
    },
    { ...common, uuid: DELETED, name: 'Old', user: 'alice', jsonpath: '$.data', deleted: '2020-02-01 09:00:00' },
    { ...common, uuid: DISABLED, name: 'Down', user: 'bob', jsonpath: '$', disabled: '2020-03-01 08:00:00', error: 'Connection refused' },
    { ...common, uuid: BROKEN, name: 'Broken', user: 'bob', jsonpath: '$.data[?(@.size >' },
    { ...common, uuid: METADATA, name: 'Metadata', user: 'bob', jsonpath: '$', target_url: 'http://169.254.169.254/latest' },
    {
      ...common,
      uuid: CREDENTIALS,
      name: 'Carol',
      user: 'bob',
      jsonpath: '$',
      target_url: 'http://carol:s3cret@127.0.0.1:9/in',
      auth: null,
    },
    { ...common, uuid: RELATIVE, name: 'Relative', user: 'alice', jsonpath: 'data', created: '2020-01-15 10:00:01' },
  ]);
  await original.addEvents([
    { uuid: E1, jsondata: facilityEventText(), created: '2020-01-20 12:00:00.000001' },
    { uuid: E2, jsondata: E2_TEXT, created: '2020-01-21 12:00:00' },
    { uuid: E3, jsondata: E3_TEXT, created: '2020-01-22 12:00:00' },
  ]);
  await original.addMatches([
    { uuid: M(1), event: E1, subscription: SIZES, policy: '200', target: '200', created: '2020-01-20 12:00:01' },
    { uuid: M(2), event: E1, subscription: DISABLED, policy: '403', target: '', created: '2020-01-20 12:00:02' },
    { uuid: M(3), event: E2, subscription: SIZES, policy: '200', target: '500', created: '2020-01-21 12:00:01' },
    { uuid: M(4), event: E2, subscription: DELETED, policy: '200', target: '', created: '2020-01-21 12:00:02' },
    { uuid: M(5), event: E3, subscription: SIZES, policy: '200', target: '204', created: '2020-01-22 12:00:01' },
  ]);
}

const alice = { 'http-remote-user': 'alice' };
const bob = { 'http-remote-user': 'bob' };

for (const target of testBackends()) {
  for (const source of originalSources()) {
    const skip = source.skip || target.skip;
    describeOn({ skip }, `import-pacifica from ${source.kind} into ${target.name}`, () => {
      let original: OriginalDatabaseFixture;
      let here: Awaited<ReturnType<typeof openTestDatabase>>;
      let app: FastifyInstance;
      const cli = (...args: string[]) =>
        runCli(['--database-url', here.database.url, 'import-pacifica', '--from', original.url, '--timezone', 'Europe/Berlin', ...args], {
          NOTIFICATIONS_SECRET_KEY: SECRET_KEY,
        });
      let first: Awaited<ReturnType<typeof cli>>;
      // MySQL's datetime keeps whole seconds.
      const time = (formatted: string) => (source.kind === 'mysql' ? formatted.replace(/\.\d{6}$/, '.000000') : formatted);

      before(async () => {
        original = await source.create();
        await fill(original);
        here = await openTestDatabase(target);
        app = await startApiApp(here.handle, { eventmatch: { secretKey: new Keyring([KEY]) } });
        first = await cli();
      });
      after(async () => {
        await app?.close();
        await here?.close();
        await original?.cleanup();
      });

      it('imports everything, saying what came over and what came over disabled', () => {
        assert.equal(first.code, 0, first.stdout + first.stderr);
        assert.match(first.stdout, /^subscriptions: 7 new, 0 already present \(of 7 read\)$/m);
        assert.match(first.stdout, /of the new: 1 deleted .*, 3 disabled/);
        assert.match(first.stdout, new RegExp(`${BROKEN} bob "Broken": jsonpath: does not compile`));
        assert.match(first.stdout, new RegExp(`${METADATA} bob "Metadata": target_url: address 169\\.254\\.169\\.254`));
        assert.match(first.stdout, new RegExp(`moved from target_url into auth.*\\n    ${CREDENTIALS} bob`));
        assert.match(first.stdout, /^events: 3 new, 0 already present \(of 3 read\)$/m);
        assert.match(first.stdout, /^matches: 5 new, 0 already present \(of 5 read\)$/m);
        assert.match(first.stdout, /1 new event repeats the source and id of an earlier one/);
        assert.match(first.stdout, /^done in [\d.]+ s \(\d+ log rows a second\), peak resident memory \d+ MB$/m);
      });

      it('keeps each record as it was, its times read in the original zone, its credentials sealed', async () => {
        const record = (await app.inject({ url: `/eventmatch/${SIZES}`, headers: alice })).json<Record<string, unknown>>();
        assert.deepEqual(record, {
          user: 'alice',
          uuid: SIZES,
          name: 'Large files',
          jsonpath: '$.data[*][?(@.size > 100)].name',
          target_url: 'http://127.0.0.1:9/hook',
          auth: { type: 'basic', basic: { username: 'u', password: 'p' } },
          extensions: { facility: 'emsl' },
          created: time('2020-01-15T09:00:00.123456'),
          updated: time('2020-01-16T10:00:00.500000'),
          deleted: null,
          disabled: null,
          version: 'v0.1',
          error: null,
          rate_limit: null,
          delivery: 'push',
          notices: false,
        });
        const stored = await subscriptionsByUuid(here.handle.db, [SIZES, CREDENTIALS]);
        assert.match(stored.get(SIZES)!.auth, /^v1:/, 'sealed with NOTIFICATIONS_SECRET_KEY');
        const down = (await app.inject({ url: `/eventmatch/${DISABLED}`, headers: bob })).json<Record<string, unknown>>();
        assert.equal(down.disabled, '2020-03-01T07:00:00.000000');
        assert.equal(down.error, 'Connection refused');
        const carol = (await app.inject({ url: `/eventmatch/${CREDENTIALS}`, headers: bob })).json<Record<string, unknown>>();
        assert.equal(carol.target_url, 'http://127.0.0.1:9/in');
        assert.deepEqual(carol.auth, { type: 'basic', basic: { username: 'carol', password: 's3cret' } });
        assert.equal(carol.disabled, null);
        for (const uuid of [BROKEN, METADATA]) {
          const disabled = (await app.inject({ url: `/eventmatch/${uuid}`, headers: bob })).json<Record<string, unknown>>();
          assert.notEqual(disabled.disabled, null, uuid);
          assert.match(String(disabled.error), /^came over from the original service disabled: (jsonpath|target_url): /);
        }
      });

      it('keeps deleted subscriptions deleted: 404 to their owner, out of the list', async () => {
        assert.equal((await app.inject({ url: `/eventmatch/${DELETED}`, headers: alice })).statusCode, 404);
        const listed = (await app.inject({ url: '/eventmatch', headers: alice })).json<Array<{ uuid: string }>>();
        assert.deepEqual(
          listed.map((s) => s.uuid),
          [SIZES, RELATIVE],
        );
      });

      it('reads imported expressions in the original dialect, whatever the service is set to', async () => {
        const event = {
          data: [
            { size: 50, name: 'small' },
            { size: 500, name: 'big' },
          ],
        };
        const tried = (await app.inject({ method: 'POST', url: `/eventmatch/${SIZES}/test`, headers: alice, payload: event })).json<{
          matches: boolean;
          dialect: string;
          values: unknown[];
        }>();
        assert.deepEqual(
          { matches: tried.matches, dialect: tried.dialect, values: tried.values },
          { matches: true, dialect: 'jsonpath2', values: ['big'] },
        );
        const relative = (await app.inject({ method: 'POST', url: `/eventmatch/${RELATIVE}/test`, headers: alice, payload: event })).json<{
          dialect: string;
          values: unknown[];
        }>();
        assert.equal(relative.dialect, 'jsonpath2');
        assert.deepEqual(relative.values, [event.data]);
      });

      it('brings the log over as history: eventget shows every event and match, none queued', async () => {
        const got = await runCli(['--database-url', here.database.url, 'eventget', '--json', E1, E2, E3]);
        assert.equal(got.code, 0, got.stderr);
        const events = got.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { uuid: string; received: string; event: unknown; matches: Array<Record<string, unknown>> });
        assert.deepEqual(
          events.map((e) => [e.uuid, e.received]),
          [
            [E1, time('2020-01-20T11:00:00.000001')],
            [E2, '2020-01-21T11:00:00.000000'],
            [E3, '2020-01-22T11:00:00.000000'],
          ],
        );
        assert.deepEqual(events[1]!.event, JSON.parse(E2_TEXT));
        const matches = events.flatMap((e) =>
          e.matches.map((m) => [m.uuid, m.subscription, m.user, m.state, m.policy, m.target, m.created]),
        );
        assert.deepEqual(matches, [
          [M(1), SIZES, 'alice', 'delivered', 200, 200, '2020-01-20T11:00:01.000000'],
          [M(2), DISABLED, 'bob', 'denied', 403, null, '2020-01-20T11:00:02.000000'],
          [M(3), SIZES, 'alice', 'failed', 200, 500, '2020-01-21T11:00:01.000000'],
          [M(4), DELETED, 'alice', 'failed', 200, null, '2020-01-21T11:00:02.000000'],
          [M(5), SIZES, 'alice', 'delivered', 200, 204, '2020-01-22T11:00:01.000000'],
        ]);
        const history = (await app.inject({ url: `/eventmatch/${SIZES}/deliveries`, headers: alice })).json<
          Array<{ elm: string; event: { id: string }; state: string }>
        >();
        assert.deepEqual(
          history.map((d) => [d.elm, d.event.id, d.state]),
          [
            [M(5), `x-1#${E3}`, 'delivered'],
            [M(3), 'x-1', 'failed'],
            [M(1), 'C234-1234-1234', 'delivered'],
          ],
        );
      });

      it('a second run adds and changes nothing, and says so', async () => {
        const before = await subscriptionsByUuid(here.handle.db, [SIZES, BROKEN]);
        const again = await cli();
        assert.equal(again.code, 0, again.stdout + again.stderr);
        assert.match(again.stdout, /^subscriptions: 0 new, 7 already present \(of 7 read\)$/m);
        assert.match(again.stdout, /^events: 0 new, 3 already present \(of 3 read\)$/m);
        assert.match(again.stdout, /^matches: 0 new, 5 already present \(of 5 read\)$/m);
        assert.match(again.stdout, /^nothing new: everything was here already/m);
        assert.deepEqual(await subscriptionsByUuid(here.handle.db, [SIZES, BROKEN]), before);
      });

      it('leaves a row here that differs from the original as it is, and reports the conflict (exit 1)', async () => {
        await original.rename(SIZES, 'Renamed in the original', '2020-06-01 00:00:00');
        const conflicted = await cli('--subscriptions-only');
        assert.equal(conflicted.code, 1, conflicted.stdout + conflicted.stderr);
        assert.match(conflicted.stdout, /^subscriptions: 0 new, 6 already present, 1 conflict \(of 7 read\)$/m);
        assert.match(
          conflicted.stdout,
          new RegExp(
            `^    ${SIZES}: subscription of alice: differs in name, updated \\(the original changed it after it was imported\\); left as it is here$`,
            'm',
          ),
        );
        const record = (await app.inject({ url: `/eventmatch/${SIZES}`, headers: alice })).json<{ name: string }>();
        assert.equal(record.name, 'Large files');
      });
    });
  }
}
