import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { EventmatchDependencies } from '../../src/api/eventmatch-routes.js';
import { loadConfig } from '../../src/config/load.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { addressGuard } from '../../src/net/address-guard.js';
import { appOn, startEventmatchApp } from '../support/app.js';
import { describeOn, testBackends } from '../support/database.js';
import { EXPECTED_RECORD_FIELDS } from '../support/record-fields.js';
import { subscriptionRow } from '../support/subscription-row.js';
import { DEFAULT_TARGET_RULES } from '../support/target-guard.js';

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;
const startApp = (database: DatabaseHandle, overrides: Partial<EventmatchDependencies> = {}) => startEventmatchApp(database, overrides);

const as = (user: string) => ({ 'http-remote-user': user });
const sample = (extra: Record<string, unknown> = {}) => ({
  name: 'text files of project 1234',
  jsonpath: "$.data[?@.mimetype == 'text/plain']",
  target_url: 'https://pipeline.example.org/hook',
  ...extra,
});

type Record_ = Record<string, unknown> & { uuid: string; updated: string };

for (const backend of testBackends()) {
  describeOn(backend, `/eventmatch (${backend.name})`, () => {
    const app = appOn(backend, startApp);

    async function create(user: string, body: Record<string, unknown> = sample()): Promise<Record_> {
      const response = await app.inject({ method: 'POST', url: '/eventmatch', headers: as(user), payload: body });
      assert.equal(response.statusCode, 200, response.body);
      return response.json<Record_>();
    }
    const get = (user: string, uuid: string) => app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: as(user) });
    const put = (user: string, uuid: string, body: unknown) =>
      app.inject({ method: 'PUT', url: `/eventmatch/${uuid}`, headers: as(user), payload: body as object });
    const remove = (user: string, uuid: string) => app.inject({ method: 'DELETE', url: `/eventmatch/${uuid}`, headers: as(user) });
    const list = async (user: string, query = ''): Promise<Record_[]> => {
      const response = await app.inject({ method: 'GET', url: `/eventmatch${query}`, headers: as(user) });
      assert.equal(response.statusCode, 200, response.body);
      return response.json<Record_[]>();
    };

    describe('create', () => {
      it('answers 200 with exactly the fields of the spec, in its order, and a Location', async () => {
        const response = await app.inject({ method: 'POST', url: '/eventmatch', headers: as('alice'), payload: sample() });
        assert.equal(response.statusCode, 200);
        const record = response.json<Record_>();
        assert.deepEqual(Object.keys(record), EXPECTED_RECORD_FIELDS);
        assert.equal(response.headers.location, `/eventmatch/${record.uuid}`);
        assert.match(record.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        assert.deepEqual(
          { ...record, uuid: '', created: '', updated: '' },
          {
            user: 'alice',
            uuid: '',
            ...sample(),
            auth: {},
            extensions: {},
            created: '',
            updated: '',
            deleted: null,
            disabled: null,
            version: 'v0.1',
            error: null,
            rate_limit: null,
            delivery: 'push',
            notices: false,
          },
        );
        assert.match(String(record.created), TIMESTAMP);
        assert.equal(record.updated, record.created);
        const now = new Date().toISOString().slice(0, 16);
        assert.equal(String(record.created).slice(0, 16) <= now, true);
      });

      it('echoes auth and extensions as supplied', async () => {
        const basic = { type: 'basic', basic: { username: 'pipeline', password: 's3cret' } };
        const header = { type: 'header', header: { type: 'Bearer', credentials: 'abc.def-ghi' } };
        const extensions = { project: '1234', priority: 7, urgent: true, negative: -2147483648 };
        assert.deepEqual((await create('alice', sample({ auth: basic, extensions }))).auth, basic);
        const record = await create('alice', sample({ auth: header, extensions }));
        assert.deepEqual(record.auth, header);
        assert.deepEqual(record.extensions, extensions);
        assert.deepEqual((await get('alice', record.uuid)).json(), record);
      });

      it('ignores service-set fields sent by the client', async () => {
        const forged = {
          uuid: '00000000-0000-4000-8000-000000000000',
          user: 'mallory',
          created: '2001-01-01T00:00:00.000000',
          updated: '2001-01-01T00:00:00.000000',
          deleted: '2001-01-01T00:00:00.000000',
          version: 'v9',
          error: 'forged',
        };
        const record = await create('alice', sample(forged));
        assert.notEqual(record.uuid, forged.uuid);
        assert.equal(record.user, 'alice');
        assert.notEqual(record.created, forged.created);
        assert.equal(record.deleted, null);
        assert.equal(record.version, 'v0.1');
        assert.equal(record.error, null);
        assert.equal((await get('mallory', forged.uuid)).statusCode, 404);
      });

      it('accepts disabled: null as enabled and any other value as disabled at creation', async () => {
        assert.equal((await create('alice', sample({ disabled: null }))).disabled, null);
        for (const value of [true, '2020-01-01T00:00:00.000000', 0]) {
          const record = await create('alice', sample({ disabled: value }));
          assert.equal(record.disabled, record.created, `disabled: ${JSON.stringify(value)}`);
        }
      });

      it('accepts an expression that is not valid RFC 9535 as jsonpath2, and a root-relative one', async () => {
        const record = await create('alice', sample({ jsonpath: '$.data[*][?(@.size > 100)].name' }));
        assert.equal(record.jsonpath, '$.data[*][?(@.size > 100)].name');
        const row = await app.handle.db
          .selectFrom('subscriptions')
          .select('dialect')
          .where('uuid', '=', record.uuid)
          .executeTakeFirstOrThrow();
        assert.equal(row.dialect, 'rfc9535');
        const pacifica = await create('alice', sample({ jsonpath: '$.data[*][?(@.mimetype = "text/plain")]' }));
        const pacificaRow = await app.handle.db
          .selectFrom('subscriptions')
          .select('dialect')
          .where('uuid', '=', pacifica.uuid)
          .executeTakeFirstOrThrow();
        assert.equal(pacificaRow.dialect, 'jsonpath2');
        assert.equal((await create('alice', sample({ jsonpath: 'data.files[0]' }))).jsonpath, 'data.files[0]');
      });
    });

    describe('read', () => {
      it('GET /eventmatch/{uuid} answers the record; the uuid is case-insensitive', async () => {
        const record = await create('alice');
        assert.deepEqual((await get('alice', record.uuid)).json(), record);
        assert.deepEqual((await get('alice', record.uuid.toUpperCase())).json(), record);
      });

      it("GET /eventmatch lists only the caller's live subscriptions, oldest first", async () => {
        const created = [await create('lister'), await create('lister'), await create('lister')];
        await create('someone-else');
        assert.deepEqual(await list('lister'), created);
        assert.equal((await remove('lister', created[1]!.uuid)).statusCode, 200);
        assert.deepEqual(
          (await list('lister')).map((r) => r.uuid),
          [created[0]!.uuid, created[2]!.uuid],
        );
        assert.deepEqual(await list('nobody'), []);
      });

      it('pages with limit and offset', async () => {
        const created: string[] = [];
        for (let i = 0; i < 5; i++) created.push((await create('pager', sample({ name: `n${i}` }))).uuid);
        assert.deepEqual(
          (await list('pager', '?limit=2')).map((r) => r.uuid),
          created.slice(0, 2),
        );
        assert.deepEqual(
          (await list('pager', '?limit=2&offset=2')).map((r) => r.uuid),
          created.slice(2, 4),
        );
        assert.deepEqual(
          (await list('pager', '?offset=4')).map((r) => r.uuid),
          created.slice(4),
        );
        assert.deepEqual(await list('pager', '?offset=5'), []);
        assert.deepEqual(
          (await list('pager', '?limit=1000&offset=0')).map((r) => r.uuid),
          created,
        );
      });

      it('answers at most 100 by default', async () => {
        await Promise.all(Array.from({ length: 101 }, () => app.handle.db.insertInto('subscriptions').values(rawRow('many')).execute()));
        assert.equal((await list('many')).length, 100);
        assert.equal((await list('many', '?limit=101')).length, 101);
      });
    });

    describe('update', () => {
      it('a body with only target_url changes only target_url (and updated)', async () => {
        const before = await create(
          'alice',
          sample({ auth: { type: 'basic', basic: { username: 'u', password: 'p' } }, extensions: { project: 'x' } }),
        );
        const response = await put('alice', before.uuid, { target_url: 'http://elsewhere.example.org:8080/x?y=1' });
        assert.equal(response.statusCode, 200);
        const after = response.json<Record_>();
        assert.deepEqual(Object.keys(after), EXPECTED_RECORD_FIELDS);
        assert.deepEqual({ ...after, updated: '' }, { ...before, target_url: 'http://elsewhere.example.org:8080/x?y=1', updated: '' });
        assert.ok(after.updated > before.updated);
        assert.deepEqual((await get('alice', before.uuid)).json(), after);
      });

      it('changes each writable field', async () => {
        const record = await create('alice');
        const changes = {
          name: 'renamed',
          jsonpath: '$.data[*][?(@.mimetype = "application/pdf")]',
          target_url: 'http://127.0.0.1:9000/',
          auth: { type: 'header', header: { type: 'Bearer', credentials: 't0ken' } },
          extensions: { facility: 'emsl' },
          notices: true,
        };
        for (const [field, value] of Object.entries(changes)) {
          const response = await put('alice', record.uuid, { [field]: value });
          assert.equal(response.statusCode, 200, response.body);
          assert.deepEqual(response.json<Record_>()[field], value);
        }
        const row = await app.handle.db
          .selectFrom('subscriptions')
          .select('dialect')
          .where('uuid', '=', record.uuid)
          .executeTakeFirstOrThrow();
        assert.equal(row.dialect, 'jsonpath2', 'a new expression is compiled and its dialect stored');
        assert.deepEqual((await put('alice', record.uuid, { auth: {} })).json<Record_>().auth, {});
      });

      it('sets notices on create and PUT, false unless sent, for push and pull alike; other changes keep it', async () => {
        const plain = await create('noticer');
        assert.equal(plain.notices, false);
        const asking = await create('noticer', sample({ notices: true }));
        assert.equal(asking.notices, true);
        assert.deepEqual((await get('noticer', asking.uuid)).json(), asking);
        const pull = await create('noticer', { name: 'reader', jsonpath: '$', delivery: 'pull', notices: true });
        assert.equal(pull.notices, true);
        const stored = await app.handle.db.selectFrom('subscriptions').select(['uuid', 'notices']).where('owner', '=', 'noticer').execute();
        assert.deepEqual(
          new Map(stored.map((row) => [row.uuid, row.notices])),
          new Map([
            [plain.uuid, 0],
            [asking.uuid, 1],
            [pull.uuid, 1],
          ]),
        );

        const turnedOn = (await put('noticer', plain.uuid, { notices: true })).json<Record_>();
        assert.equal(turnedOn.notices, true);
        assert.equal((await put('noticer', plain.uuid, { name: 'renamed' })).json<Record_>().notices, true, 'not sent: kept');
        const turnedOff = await put('noticer', pull.uuid, { ...pull, notices: false });
        assert.equal(turnedOff.statusCode, 200, turnedOff.body);
        assert.equal(turnedOff.json<Record_>().notices, false);
        assert.deepEqual(
          (await list('noticer')).map((r) => [r.uuid, r.notices]),
          [
            [plain.uuid, true],
            [asking.uuid, true],
            [pull.uuid, false],
          ],
        );
        for (const notices of ['yes', 0, null, {}]) {
          const refused = await put('noticer', asking.uuid, { notices });
          assert.equal(refused.statusCode, 400, JSON.stringify(notices));
          assert.deepEqual(refused.json(), {
            statusCode: 400,
            error: 'Bad Request',
            code: 'FIELD_TYPE',
            message: 'body.notices: must be a boolean',
          });
        }
        assert.equal((await get('noticer', asking.uuid)).json<Record_>().notices, true, 'a refused PUT changes nothing');
      });

      it('accepts a record read back unchanged, ignoring its service-set fields', async () => {
        const record = await create('alice', sample({ auth: { type: 'basic', basic: { username: 'u', password: 'p' } } }));
        const response = await put('alice', record.uuid, {
          ...record,
          uuid: randomUUID(),
          user: 'mallory',
          created: '1999-01-01T00:00:00.000000',
          version: 'v7',
        });
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual({ ...response.json<Record_>(), updated: '' }, { ...record, updated: '' });
      });

      it('moves updated strictly forward on every PUT, an empty one included, even within one millisecond', async () => {
        const record = await create('alice');
        let previous = record.updated;
        for (let i = 0; i < 10; i++) {
          const updated = (await put('alice', record.uuid, {})).json<Record_>().updated;
          assert.match(updated, TIMESTAMP);
          assert.ok(updated > previous, `${updated} after ${previous}`);
          previous = updated;
        }
        const concurrent = await Promise.all(Array.from({ length: 10 }, (_, i) => put('alice', record.uuid, { name: `n${i}` })));
        const stamps = concurrent.map((r) => r.json<Record_>().updated);
        assert.equal(new Set(stamps).size, 10);
        assert.ok(stamps.every((s) => s > previous));
      });

      it('disables with any non-null disabled, and re-enables with null, clearing error', async () => {
        const record = await create('alice');
        for (const value of ['2020-01-01T00:00:00.000000', true, false, 'yes', 1, {}]) {
          const disabled = (await put('alice', record.uuid, { disabled: value })).json<Record_>();
          assert.match(String(disabled.disabled), TIMESTAMP);
          assert.equal(disabled.disabled, disabled.updated, `disabled now, not ${JSON.stringify(value)}`);
        }
        // As the delivery stage does when a target keeps failing.
        await app.handle.db
          .updateTable('subscriptions')
          .set({ error: 'target answered 410 Gone' })
          .where('uuid', '=', record.uuid)
          .execute();
        assert.equal((await get('alice', record.uuid)).json<Record_>().error, 'target answered 410 Gone');
        const renamed = (await put('alice', record.uuid, { name: 'still broken' })).json<Record_>();
        assert.equal(renamed.error, 'target answered 410 Gone', 'other changes keep the error');
        const enabled = (await put('alice', record.uuid, { disabled: null })).json<Record_>();
        assert.equal(enabled.disabled, null);
        assert.equal(enabled.error, null);
      });
    });

    describe('delete', () => {
      it('soft-deletes: 200 with the final record, then 404 everywhere and absent from the list', async () => {
        const record = await create('deleter');
        const response = await remove('deleter', record.uuid);
        assert.equal(response.statusCode, 200);
        const final = response.json<Record_>();
        assert.deepEqual(Object.keys(final), EXPECTED_RECORD_FIELDS);
        assert.match(String(final.deleted), TIMESTAMP);
        assert.ok(String(final.deleted) > record.updated);
        assert.deepEqual({ ...final, deleted: null, updated: '' }, { ...record, updated: '' });
        for (const again of [
          await remove('deleter', record.uuid),
          await get('deleter', record.uuid),
          await put('deleter', record.uuid, { name: 'x' }),
        ]) {
          assert.equal(again.statusCode, 404);
          assert.equal(again.json<{ message: string }>().message, `subscription ${record.uuid} not found`);
        }
        assert.deepEqual(await list('deleter'), []);
        const row = await app.handle.db.selectFrom('subscriptions').selectAll().where('uuid', '=', record.uuid).executeTakeFirst();
        assert.ok(row?.deleted, 'the row stays, marked deleted');
      });

      it('accepts a Content-Type: application/json header on a DELETE without a body', async () => {
        const record = await create('deleter');
        const response = await app.inject({
          method: 'DELETE',
          url: `/eventmatch/${record.uuid}`,
          headers: { ...as('deleter'), 'content-type': 'application/json' },
        });
        assert.equal(response.statusCode, 200, response.body);
      });
    });

    describe('not found', () => {
      it('answers the same 404 for a missing, deleted, malformed or foreign uuid', async () => {
        const foreign = await create('bob');
        const deleted = await create('alice');
        await remove('alice', deleted.uuid);
        const cases = { missing: randomUUID(), deleted: deleted.uuid, malformed: 'not-a-uuid', foreign: foreign.uuid };
        for (const [reason, uuid] of Object.entries(cases)) {
          for (const request of [
            () => get('alice', uuid),
            () => put('alice', uuid, { name: 'x' }),
            () => remove('alice', uuid),
            () => app.inject({ method: 'POST', url: `/eventmatch/${uuid}/test`, headers: as('alice'), payload: {} }),
          ]) {
            const response = await request();
            assert.equal(response.statusCode, 404, `${reason}: ${response.body}`);
            assert.deepEqual(response.json(), {
              statusCode: 404,
              error: 'Not Found',
              code: 'SUBSCRIPTION_NOT_FOUND',
              message: `subscription ${uuid} not found`,
            });
          }
        }
        assert.deepEqual((await get('bob', foreign.uuid)).json(), foreign, 'the foreign subscription is untouched');
      });
    });

    describe('identity', () => {
      it('answers 401 without the header, with an empty one, or a blank one', async () => {
        const cases: Array<Record<string, string>> = [{}, { 'http-remote-user': '' }, { 'http-remote-user': '   ' }];
        for (const headers of cases) {
          for (const [method, url] of [
            ['GET', '/eventmatch'],
            ['POST', '/eventmatch'],
            ['GET', `/eventmatch/${randomUUID()}`],
            ['DELETE', `/eventmatch/${randomUUID()}`],
            ['POST', '/eventmatch/test'],
          ] as const) {
            const response = await app.inject({ method, url, headers, ...(method === 'POST' ? { payload: sample() } : {}) });
            assert.equal(response.statusCode, 401, `${method} ${url} ${JSON.stringify(headers)}`);
            assert.deepEqual(response.json(), {
              statusCode: 401,
              error: 'Unauthorized',
              code: 'UNAUTHENTICATED',
              message: 'missing identity: the Http-Remote-User header is required',
            });
          }
        }
      });

      it('answers 401 before looking at the body', async () => {
        const response = await app.inject({ method: 'POST', url: '/eventmatch', headers: { 'content-type': 'text/plain' }, payload: 'x' });
        assert.equal(response.statusCode, 401);
      });

      it('refuses the header given twice', async () => {
        const response = await app.inject({ method: 'GET', url: '/eventmatch', headers: { 'http-remote-user': ['alice', 'bob'] } });
        assert.equal(response.statusCode, 400);
        assert.match(response.json<{ message: string }>().message, /Http-Remote-User header is given more than once/);
      });

      it('names a configured header in the 401', async () => {
        const custom = await startApp(app.handle, { identity: { header: 'x-forwarded-user', defaultUser: null } });
        try {
          const response = await custom.inject({ method: 'GET', url: '/eventmatch', headers: as('alice') });
          assert.equal(response.statusCode, 401);
          assert.equal(response.json<{ message: string }>().message, 'missing identity: the X-Forwarded-User header is required');
          const ok = await custom.inject({ method: 'GET', url: '/eventmatch', headers: { 'X-Forwarded-User': 'alice' } });
          assert.equal(ok.statusCode, 200);
        } finally {
          await custom.close();
        }
      });

      it('uses the default user when one is configured and the header is absent or blank', async () => {
        const compat = await startApp(app.handle, { identity: { header: 'http-remote-user', defaultUser: 'facility' } });
        try {
          const created = await compat.inject({ method: 'POST', url: '/eventmatch', payload: sample() });
          assert.equal(created.statusCode, 200);
          assert.equal(created.json<Record_>().user, 'facility');
          const blank = await compat.inject({
            method: 'GET',
            url: `/eventmatch/${created.json<Record_>().uuid}`,
            headers: { 'http-remote-user': ' ' },
          });
          assert.equal(blank.statusCode, 200);
          const named = await compat.inject({ method: 'GET', url: `/eventmatch/${created.json<Record_>().uuid}`, headers: as('alice') });
          assert.equal(named.statusCode, 404, 'a named user is that user, not the default');
        } finally {
          await compat.close();
        }
      });
    });

    describe('target address', () => {
      const REFUSED: Array<[string, string]> = [
        ['http://169.254.169.254/', 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY'],
        ['http://169.254.169.254/latest/meta-data/', 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY'],
        ['http://[64:ff9b::a9fe:a9fe]/', 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY'],
        ['http://[::ffff:169.254.169.254]/', 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY'],
        ['http://0.0.0.0:8080/', 'address 0.0.0.0 is denied by NOTIFICATIONS_TARGET_DENY'],
        ['http://[::]:8080/', 'address :: is denied by NOTIFICATIONS_TARGET_DENY'],
        // Parsed as delivery parses it: a decimal host is an IPv4 address.
        ['http://2852039166/', 'address 169.254.169.254 is denied by NOTIFICATIONS_TARGET_DENY'],
      ];
      /** An app whose guard is built from these environment variables, as the server builds it. */
      const appWith = (env: Record<string, string>, overrides: Partial<EventmatchDependencies> = {}) => {
        const config = loadConfig({ argv: [], env, readFile: () => '' });
        return startApp(app.handle, { targetGuard: addressGuard({ allow: config.targetAllow, deny: config.targetDeny }), ...overrides });
      };
      const message = (response: { body: string }) => JSON.parse(response.body) as { statusCode: number; message: string };

      it('refuses on create, by default, an address delivery would refuse, naming target_url, and stores nothing', async () => {
        const stored = (await list('carol')).length;
        for (const [url, why] of REFUSED) {
          const response = await app.inject({
            method: 'POST',
            url: '/eventmatch',
            headers: as('carol'),
            payload: sample({ target_url: url }),
          });
          assert.deepEqual(
            message(response),
            { statusCode: 400, error: 'Bad Request', code: 'TARGET_DENIED', message: `body.target_url: ${why}` },
            url,
          );
        }
        assert.equal((await list('carol')).length, stored);
      });

      it('refuses the same on a PUT that changes target_url, and changes nothing', async () => {
        const record = await create('carol');
        for (const [url, why] of REFUSED) {
          const response = await put('carol', record.uuid, { name: 'moved', target_url: url });
          assert.deepEqual(
            message(response),
            { statusCode: 400, error: 'Bad Request', code: 'TARGET_DENIED', message: `body.target_url: ${why}` },
            url,
          );
        }
        assert.deepEqual((await get('carol', record.uuid)).json(), record);
      });

      it('judges a name by the addresses it resolves to: localhost is accepted by default, refused when loopback is denied', async () => {
        const accepted = await create('carol', sample({ target_url: 'http://localhost:8080/hook' }));
        assert.equal((await put('carol', accepted.uuid, { target_url: 'http://localhost:8081/hook' })).statusCode, 200);
        // localhost may also resolve to ::1: delivery would use that, so it is denied too.
        const strict = await appWith({ NOTIFICATIONS_TARGET_DENY: '127.0.0.0/8,::1/128' });
        try {
          const created = await strict.inject({
            method: 'POST',
            url: '/eventmatch',
            headers: as('dave'),
            payload: sample({ target_url: 'http://localhost:8080/hook' }),
          });
          assert.equal(created.statusCode, 400);
          assert.match(
            message(created).message,
            /^body\.target_url: every address of localhost is refused: address (127\.0\.0\.1|::1) is denied by NOTIFICATIONS_TARGET_DENY/,
          );
          const moved = await strict.inject({
            method: 'PUT',
            url: `/eventmatch/${accepted.uuid}`,
            headers: as('carol'),
            payload: { target_url: 'http://localhost:9090/' },
          });
          assert.equal(moved.statusCode, 400);
          assert.match(message(moved).message, /^body\.target_url: every address of localhost is refused/);
          assert.equal((await get('carol', accepted.uuid)).json<Record_>().target_url, 'http://localhost:8081/hook');
          assert.equal((await list('dave')).length, 0);
        } finally {
          await strict.close();
        }
      });

      it('refuses an address outside NOTIFICATIONS_TARGET_ALLOW when there is one', async () => {
        const allowing = await appWith({ NOTIFICATIONS_TARGET_ALLOW: '10.0.0.0/8' });
        try {
          const outside = await allowing.inject({
            method: 'POST',
            url: '/eventmatch',
            headers: as('dave'),
            payload: sample({ target_url: 'http://127.0.0.1:8080/' }),
          });
          assert.equal(message(outside).message, 'body.target_url: address 127.0.0.1 is not in NOTIFICATIONS_TARGET_ALLOW');
          const inside = await allowing.inject({
            method: 'POST',
            url: '/eventmatch',
            headers: as('dave'),
            payload: sample({ target_url: 'http://[64:ff9b::10.1.2.3]:8080/' }),
          });
          assert.equal(inside.statusCode, 200, inside.body);
        } finally {
          await allowing.close();
        }
      });

      it('accepts a name that does not resolve: delivery judges it when it connects', async () => {
        const record = await create('carol', sample({ target_url: 'http://does-not-exist.invalid/' }));
        assert.equal(record.target_url, 'http://does-not-exist.invalid/');
        assert.equal((await put('carol', record.uuid, { target_url: 'https://also-not.invalid:8443/x' })).statusCode, 200);
      });

      it('does not hold a create or PUT longer than the lookup time-out when the resolver does not answer', async () => {
        const silent = await startApp(app.handle, {
          targetGuard: addressGuard(DEFAULT_TARGET_RULES, () => undefined),
          targetLookupTimeoutMs: 100,
        });
        try {
          const started = performance.now();
          const created = await silent.inject({
            method: 'POST',
            url: '/eventmatch',
            headers: as('erin'),
            payload: sample({ target_url: 'http://slow.example/hook' }),
          });
          assert.equal(created.statusCode, 200, created.body);
          const moved = await silent.inject({
            method: 'PUT',
            url: `/eventmatch/${created.json<Record_>().uuid}`,
            headers: as('erin'),
            payload: { target_url: 'http://slower.example/' },
          });
          assert.equal(moved.statusCode, 200, moved.body);
          assert.ok(performance.now() - started < 2_000, `${performance.now() - started} ms`);
        } finally {
          await silent.close();
        }
      });
    });
  });
}

function rawRow(owner: string) {
  const now = Date.now() * 1000 + Math.floor(Math.random() * 1000);
  return subscriptionRow({ owner, name: 'bulk', jsonpath: '$.data', target_url: 'http://127.0.0.1/', created: now, updated: now });
}
