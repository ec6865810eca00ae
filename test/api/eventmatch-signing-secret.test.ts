/**
 * `GET /eventmatch/{uuid}/secret` and `POST /eventmatch/{uuid}/secret/rotate`: the owner's
 * alone, never part of the record, sealed at rest with NOTIFICATIONS_SECRET_KEY.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Keyring } from '../../src/config/keyring.js';
import { startEventmatchApp } from '../support/app.js';
import { describeOn, openTestDatabase, testBackends } from '../support/database.js';

const ALICE = { 'http-remote-user': 'alice' };
const BOB = { 'http-remote-user': 'bob' };
const SUBSCRIPTION = { name: 'n', jsonpath: '$.data', target_url: 'https://example.org/hook' };
const GENERATED = /^whsec_[A-Za-z0-9+/]{43}=$/;
const whsec = (bytes: number) => `whsec_${randomBytes(bytes).toString('base64')}`;

for (const backend of testBackends()) {
  describeOn(backend, `/eventmatch signing secrets (${backend.name})`, () => {
    let test: Awaited<ReturnType<typeof openTestDatabase>>;
    let app: FastifyInstance;
    const key = new Keyring([randomBytes(32)]);
    before(async () => {
      test = await openTestDatabase(backend);
      app = await startEventmatchApp(test.handle, { secretKey: key });
    });
    after(async () => {
      await app?.close();
      await test?.close();
    });

    const create = async () => {
      const created = await app.inject({ method: 'POST', url: '/eventmatch', headers: ALICE, payload: SUBSCRIPTION });
      assert.equal(created.statusCode, 200);
      return created;
    };
    const readSecret = (uuid: string, headers = ALICE) => app.inject({ method: 'GET', url: `/eventmatch/${uuid}/secret`, headers });
    const rotate = (uuid: string, payload?: object, headers = ALICE) =>
      app.inject({ method: 'POST', url: `/eventmatch/${uuid}/secret/rotate`, headers, ...(payload === undefined ? {} : { payload }) });
    const rawRow = (uuid: string) =>
      test.handle.db.selectFrom('subscriptions').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();

    it('gives each new subscription its own secret of 32 random bytes, for its owner only', async () => {
      const [first, second] = [(await create()).json<{ uuid: string }>().uuid, (await create()).json<{ uuid: string }>().uuid];
      const answer = await readSecret(first);
      assert.equal(answer.statusCode, 200);
      const { secret } = answer.json<{ secret: string }>();
      assert.deepEqual(Object.keys(answer.json()), ['secret']);
      assert.match(secret, GENERATED);
      assert.equal(Buffer.from(secret.slice(6), 'base64').length, 32);
      assert.notEqual((await readSecret(second)).json<{ secret: string }>().secret, secret);

      for (const [headers, uuid] of [
        [BOB, first],
        [ALICE, randomUUID()],
        [ALICE, 'not-a-uuid'],
      ] as const) {
        const refused = await readSecret(uuid, headers);
        assert.equal(refused.statusCode, 404);
        assert.equal(refused.json<{ code: string }>().code, 'SUBSCRIPTION_NOT_FOUND');
        assert.ok(!refused.body.includes(secret));
      }
      assert.equal((await rotate(first, undefined, BOB)).statusCode, 404, 'nor can anyone else rotate it');
      assert.equal((await readSecret(first)).json<{ secret: string }>().secret, secret);
    });

    it('is never part of the record: create, read, list, change and delete answers', async () => {
      const created = await create();
      const { uuid } = created.json<{ uuid: string }>();
      const { secret } = (await readSecret(uuid)).json<{ secret: string }>();
      const answers = [
        created,
        await app.inject({ method: 'GET', url: `/eventmatch/${uuid}`, headers: ALICE }),
        await app.inject({ method: 'GET', url: '/eventmatch', headers: ALICE }),
        await app.inject({ method: 'PUT', url: `/eventmatch/${uuid}`, headers: ALICE, payload: { name: 'm' } }),
      ];
      for (const answer of answers) {
        assert.equal(answer.statusCode, 200);
        assert.ok(!answer.body.includes(secret) && !answer.body.includes('whsec_') && !answer.body.includes('secret'), answer.body);
      }
      const deleted = await app.inject({ method: 'DELETE', url: `/eventmatch/${uuid}`, headers: ALICE });
      assert.ok(!deleted.body.includes('whsec_'));
      assert.equal((await readSecret(uuid)).statusCode, 404, 'a deleted subscription has no secret to read');
      assert.equal((await rotate(uuid)).statusCode, 404);
    });

    it('stores the secrets sealed with NOTIFICATIONS_SECRET_KEY, the previous one included', async () => {
      const { uuid } = (await create()).json<{ uuid: string }>();
      const before = (await readSecret(uuid)).json<{ secret: string }>().secret;
      const after = (await rotate(uuid)).json<{ secret: string }>().secret;
      const row = await rawRow(uuid);
      for (const [stored, plain] of [
        [row.signing_secret, after],
        [row.previous_signing_secret!, before],
      ] as const) {
        assert.match(stored, /^v1:/);
        assert.ok(!stored.includes(plain) && !stored.includes(plain.slice(6)));
      }
    });

    it('rotates to a new random secret, keeping the old one and when', async () => {
      const { uuid } = (await create()).json<{ uuid: string }>();
      const old = (await readSecret(uuid)).json<{ secret: string }>().secret;
      const rotated = await rotate(uuid);
      assert.equal(rotated.statusCode, 200);
      const { secret } = rotated.json<{ secret: string }>();
      assert.match(secret, GENERATED);
      assert.notEqual(secret, old);
      assert.equal((await readSecret(uuid)).json<{ secret: string }>().secret, secret);
      const row = await rawRow(uuid);
      assert.notEqual(row.secret_rotated, null);
      assert.equal(row.updated, row.secret_rotated, 'a write like any other: other instances hear of it');
      const again = await rotate(uuid, {});
      assert.equal(again.statusCode, 200, 'an empty object is no body');
    });

    it('rotates to a secret the owner gives: a key of 24 to 64 bytes', async () => {
      const { uuid } = (await create()).json<{ uuid: string }>();
      for (const bytes of [24, 32, 64]) {
        const given = whsec(bytes);
        const answer = await rotate(uuid, { secret: given });
        assert.equal(answer.statusCode, 200, answer.body);
        assert.deepEqual(answer.json(), { secret: given });
        assert.equal((await readSecret(uuid)).json<{ secret: string }>().secret, given);
      }
    });

    it('refuses a bad secret with 400 naming body.secret, and changes nothing', async () => {
      const { uuid } = (await create()).json<{ uuid: string }>();
      const current = (await readSecret(uuid)).json<{ secret: string }>().secret;
      const cases: Array<[unknown, string]> = [
        [whsec(23), 'FIELD_INVALID'],
        [whsec(65), 'FIELD_INVALID'],
        [randomBytes(32).toString('base64'), 'FIELD_INVALID'],
        ['whsec_not base64!', 'FIELD_INVALID'],
        ['whsec_', 'FIELD_INVALID'],
        [`whsec_${randomBytes(32).toString('base64url')}_`, 'FIELD_INVALID'],
        [42, 'FIELD_TYPE'],
        [null, 'FIELD_TYPE'],
      ];
      for (const [secret, code] of cases) {
        const refused = await rotate(uuid, { secret });
        assert.equal(refused.statusCode, 400, String(secret));
        const error = refused.json<{ code: string; message: string }>();
        assert.equal(error.code, code, String(secret));
        assert.match(error.message, /^body\.secret: /);
        if (typeof secret === 'string' && secret.length > 8) assert.ok(!error.message.includes(secret), 'the message does not repeat it');
      }
      const unknown = await rotate(uuid, { secret: whsec(32), previous: 'x' });
      assert.equal(unknown.statusCode, 400);
      assert.equal(unknown.json<{ code: string }>().code, 'FIELD_UNKNOWN');
      assert.equal((await readSecret(uuid)).json<{ secret: string }>().secret, current);
    });
  });
}
