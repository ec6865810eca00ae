/**
 * NOTIFICATIONS_USER_SUBSCRIPTIONS: one user cannot hold more live subscriptions than it
 * allows, whichever instance is asked, and nobody else is held back by it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { EventmatchDependencies } from '../../src/api/eventmatch-routes.js';
import { openDatabase } from '../../src/db/connect.js';
import { startEventmatchApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';
import { run, SERVER_BIN } from '../support/processes.js';

const LIMIT = 3;
const as = (user: string) => ({ 'http-remote-user': user });
const body = (n: number) => ({
  name: `subscription ${n}`,
  jsonpath: `$.data[?@.project == '${n}']`,
  target_url: 'https://example.org/hook',
});
const LIMIT_MESSAGE = new RegExp(`\\b${LIMIT} live subscriptions.*NOTIFICATIONS_USER_SUBSCRIPTIONS`);

describe('NOTIFICATIONS_USER_SUBSCRIPTIONS at start-up', () => {
  it('an invalid value: one line naming the setting and what it takes, exit 1', async () => {
    const result = await run(SERVER_BIN, [], { NOTIFICATIONS_USER_SUBSCRIPTIONS: 'lots' });
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, /NOTIFICATIONS_USER_SUBSCRIPTIONS: "lots" is not an integer from 1 to 999999999; write "off" for no limit/);
  });
});

for (const backend of testBackends()) {
  describeOn(backend, `live subscriptions per user (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    const apps: FastifyInstance[] = [];
    const closing: Array<() => Promise<void>> = [];
    let app: FastifyInstance;
    before(async () => {
      test = await openTestDatabase(backend);
      app = await startApp({ userSubscriptions: LIMIT });
    });
    after(async () => {
      for (const started of apps) await started.close();
      for (const close of closing) await close();
      await test.close();
    });

    async function startApp(overrides: Partial<EventmatchDependencies>): Promise<FastifyInstance> {
      const started = await startEventmatchApp(test.handle, overrides);
      apps.push(started);
      return started;
    }
    /** Another instance: its own connections and group commit, on the same database. */
    async function otherInstance(): Promise<FastifyInstance> {
      const handle = openDatabase(test.database.url);
      closing.push(() => handle.close());
      const started = await startEventmatchApp(handle, { userSubscriptions: LIMIT });
      apps.push(started);
      return started;
    }

    const create = (user: string, n: number, on = app) =>
      on.inject({ method: 'POST', url: '/eventmatch', headers: as(user), payload: body(n) });
    const createOk = async (user: string, n: number, on = app) => {
      const response = await create(user, n, on);
      assert.equal(response.statusCode, 200, response.body);
      return response.json<{ uuid: string }>().uuid;
    };
    /** Every row of `user`, deleted ones too: what was written. */
    const stored = async (user: string) =>
      (await test.handle.db.selectFrom('subscriptions').select(['uuid', 'deleted']).where('owner', '=', user).execute()).length;
    const live = async (user: string) =>
      (await app.inject({ method: 'GET', url: '/eventmatch', headers: as(user) })).json<unknown[]>().length;

    it('refuses the create past the limit with 403 SUBSCRIPTION_LIMIT naming it, and writes nothing', async () => {
      for (let n = 0; n < LIMIT; n++) await createOk('alice', n);
      const refused = await create('alice', LIMIT);
      assert.equal(refused.statusCode, 403, refused.body);
      const answer = refused.json<{ code: string; message: string; error: string }>();
      assert.equal(answer.code, 'SUBSCRIPTION_LIMIT');
      assert.equal(answer.error, 'Forbidden');
      assert.match(answer.message, LIMIT_MESSAGE);
      assert.equal(await stored('alice'), LIMIT);
      assert.equal(await live('alice'), LIMIT);
    });

    it('does not hold back another user', async () => {
      for (let n = 0; n < LIMIT; n++) await createOk('bob', n);
      assert.equal((await create('bob', LIMIT)).statusCode, 403);
      await createOk('carol', 0);
    });

    it('counts a disabled subscription, and frees a place when one is deleted', async () => {
      const uuids = [];
      for (let n = 0; n < LIMIT; n++) uuids.push(await createOk('dave', n));
      const disabled = await app.inject({
        method: 'PUT',
        url: `/eventmatch/${uuids[0]}`,
        headers: as('dave'),
        payload: { disabled: true },
      });
      assert.equal(disabled.statusCode, 200, disabled.body);
      assert.equal((await create('dave', LIMIT)).statusCode, 403, 'a disabled subscription is still held');

      const deleted = await app.inject({ method: 'DELETE', url: `/eventmatch/${uuids[1]}`, headers: as('dave') });
      assert.equal(deleted.statusCode, 200, deleted.body);
      await createOk('dave', LIMIT);
      assert.equal((await create('dave', LIMIT + 1)).statusCode, 403, 'the freed place is taken again');
      assert.equal(await live('dave'), LIMIT);
    });

    it('admits only up to the limit of creates sent at once', async () => {
      const answers = await Promise.all(Array.from({ length: 12 }, (_, n) => create('erin', n)));
      assert.deepEqual(answers.map((response) => response.statusCode).sort(), [
        ...Array<number>(LIMIT).fill(200),
        ...Array<number>(12 - LIMIT).fill(403),
      ]);
      assert.equal(await stored('erin'), LIMIT);
    });

    it('holds across instances creating at once on one database', async () => {
      const other = await otherInstance();
      const third = await otherInstance();
      const instances = [app, other, third];
      const race = (user: string) =>
        Promise.all(instances.flatMap((on) => Array.from({ length: 8 }, (_, n) => create(user, n, on).then((r) => r.statusCode))));

      // From nothing: 24 creates, three instances, exactly the limit taken.
      for (const user of ['frank', 'grace', 'heidi']) {
        const statuses = await race(user);
        assert.equal(statuses.filter((status) => status === 200).length, LIMIT, `${user}: ${statuses.join(' ')}`);
        assert.equal(await stored(user), LIMIT, user);
      }
      // One place left: one of them gets it.
      const uuid = (await other.inject({ method: 'GET', url: '/eventmatch', headers: as('frank') })).json<Array<{ uuid: string }>>()[0]!
        .uuid;
      assert.equal((await third.inject({ method: 'DELETE', url: `/eventmatch/${uuid}`, headers: as('frank') })).statusCode, 200);
      const statuses = await race('frank');
      assert.equal(statuses.filter((status) => status === 200).length, 1, statuses.join(' '));
      assert.equal(await live('frank'), LIMIT);
      assert.equal(await stored('frank'), LIMIT + 1, 'the deleted one stays, deleted');
    });

    it('off: no limit, not even the default of 1,000', async () => {
      const unlimited = await startApp({ userSubscriptions: 'off' });
      const answers = await Promise.all(Array.from({ length: 1001 }, (_, n) => create('ivan', n, unlimited)));
      assert.deepEqual(new Set(answers.map((response) => response.statusCode)), new Set([200]));
      assert.equal(await stored('ivan'), 1001);
      // The same user, on an instance with the default: no more.
      const limited = await startApp({ userSubscriptions: 1000 });
      const refused = await create('ivan', 1001, limited);
      assert.equal(refused.statusCode, 403, refused.body);
      assert.match(refused.json<{ message: string }>().message, /\b1000 live subscriptions.*NOTIFICATIONS_USER_SUBSCRIPTIONS/);
    });
  });
}
