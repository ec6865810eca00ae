/**
 * Rotating NOTIFICATIONS_SECRET_KEY end to end, with server processes, the CLI and a real
 * target: secrets sealed under key A are read under "B,A"; `reseal` seals them under B; then
 * B alone opens them. Under B alone before reseal they do not open.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, type HttpStub, startStub } from '../support/http-stub.js';
import { type RunningServer, runCli, startServer } from '../support/processes.js';

const ALICE = { 'content-type': 'application/json', 'http-remote-user': 'alice' };
const AUTH = { type: 'header', header: { type: 'Bearer', credentials: 'rotated-token' } };

for (const backend of testBackends()) {
  describeOn(backend, `rotating the secret key (${backend.name})`, () => {
    it('A, then B,A, then reseal, then B alone: deliveries carry the credentials and verify throughout', async () => {
      const database = await backend.create();
      const target = await startStub();
      const db = openDatabase(database.url);
      const env = { NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_TARGET_TIMEOUT: '2s', NOTIFICATIONS_LEASE: '4s' };
      const [keyA, keyB] = [randomBytes(32).toString('base64'), randomBytes(32).toString('hex')];
      const cli = (key: string | undefined, ...args: string[]) =>
        runCli(['--database-url', database.url, ...args], key === undefined ? {} : { NOTIFICATIONS_SECRET_KEY: key });
      const stored = (uuid: string) =>
        db.db
          .selectFrom('subscriptions')
          .select(['auth', 'signing_secret', 'previous_signing_secret'])
          .where('uuid', '=', uuid)
          .executeTakeFirstOrThrow();
      const secretOf = async (server: RunningServer, uuid: string) => {
        const response = await fetch(`${server.url}/eventmatch/${uuid}/secret`, { headers: ALICE });
        assert.equal(response.status, 200, await response.clone().text());
        return ((await response.json()) as { secret: string }).secret;
      };
      let sent = 0;
      /** Sends an event; the target's request for it, checked: credentials, and a signature under each secret. */
      const deliveredWith = async (server: RunningServer, secrets: readonly string[]) => {
        const id = `rotation-${++sent}`;
        const event = JSON.stringify({ specversion: '1.0', id, source: '/rotation', type: 't', data: 1 });
        const receive = { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: event };
        assert.equal((await fetch(`${server.url}/receive`, receive)).status, 200);
        await eventually(() => requestFor(target, id) !== undefined, `event ${id} is delivered`);
        const request = requestFor(target, id)!;
        assert.equal(request.headers.authorization, 'Bearer rotated-token');
        for (const secret of secrets) new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
      };
      try {
        assert.equal((await cli(undefined, 'dbsync')).code, 0);

        // 1) Under A: the subscription, its credentials, a signing secret rotated once (two stored).
        const underA = await startServer({ ...env, NOTIFICATIONS_SECRET_KEY: keyA });
        let uuid: string;
        let secrets: string[];
        try {
          const created = await fetch(`${underA.url}/eventmatch`, {
            method: 'POST',
            headers: ALICE,
            body: JSON.stringify({ name: 'n', jsonpath: '$.data', target_url: `${target.url}/hook`, auth: AUTH }),
          });
          assert.equal(created.status, 200);
          uuid = ((await created.json()) as { uuid: string }).uuid;
          const previous = await secretOf(underA, uuid);
          assert.equal((await fetch(`${underA.url}/eventmatch/${uuid}/secret/rotate`, { method: 'POST', headers: ALICE })).status, 200);
          secrets = [await secretOf(underA, uuid), previous];
          await deliveredWith(underA, secrets);
        } finally {
          assert.equal(await underA.stop(), 0);
        }
        const sealedByA = await stored(uuid);
        for (const value of Object.values(sealedByA)) assert.match(value!, /^v1:/);

        // B alone, before reseal: nothing A sealed opens.
        const earlyB = await startServer({ ...env, NOTIFICATIONS_SECRET_KEY: keyB });
        try {
          const read = await fetch(`${earlyB.url}/eventmatch/${uuid}`, { headers: ALICE });
          assert.equal(read.status, 500);
          assert.equal(((await read.json()) as { code: string }).code, 'CREDENTIALS_UNREADABLE');
        } finally {
          assert.equal(await earlyB.stop(), 0);
        }
        assert.deepEqual(await stored(uuid), sealedByA, 'a server under B alone changes nothing');

        // 2) Under B,A: everything opens; reseal while it runs.
        const underBA = await startServer({ ...env, NOTIFICATIONS_SECRET_KEY: `${keyB},${keyA}` });
        try {
          await deliveredWith(underBA, secrets);
          // 3) reseal under the first key.
          const resealed = await cli(`${keyB},${keyA}`, 'reseal');
          assert.equal(resealed.code, 0, resealed.stderr);
          assert.match(resealed.stdout, /^reseal: sealed the secrets of 1 subscription under the first key \(0 already were\)$/m);
          await deliveredWith(underBA, secrets);
        } finally {
          assert.equal(await underBA.stop(), 0);
        }
        const again = await cli(`${keyB},${keyA}`, 'reseal');
        assert.match(again.stdout, /sealed the secrets of 0 subscriptions under the first key \(1 already were\)/);

        // 4) B alone: A can be dropped.
        const underB = await startServer({ ...env, NOTIFICATIONS_SECRET_KEY: keyB });
        try {
          const read = await fetch(`${underB.url}/eventmatch/${uuid}`, { headers: ALICE });
          assert.equal(read.status, 200);
          assert.deepEqual(((await read.json()) as { auth: unknown }).auth, AUTH);
          assert.equal(await secretOf(underB, uuid), secrets[0]);
          await deliveredWith(underB, secrets);
        } finally {
          assert.equal(await underB.stop(), 0);
        }
      } finally {
        await db.close();
        await target.close();
        await database.cleanup();
      }
    });

    it('reseal: without a key, exit 2 saying so; a secret no key opens is named and left as it is (exit 1)', async () => {
      const database = await backend.create();
      const db = openDatabase(database.url);
      const cli = (key: string | undefined, ...args: string[]) =>
        runCli(['--database-url', database.url, ...args], key === undefined ? {} : { NOTIFICATIONS_SECRET_KEY: key });
      try {
        assert.equal((await cli(undefined, 'dbsync')).code, 0);
        const noKey = await cli(undefined, 'reseal');
        assert.equal(noKey.code, 2, noKey.stderr);
        assert.match(noKey.stderr, /^reseal: NOTIFICATIONS_SECRET_KEY is not set/m);

        const keyA = randomBytes(32).toString('base64');
        const server = await startServer({ NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_SECRET_KEY: keyA });
        const uuids: string[] = [];
        try {
          for (const name of ['first', 'second']) {
            const created = await fetch(`${server.url}/eventmatch`, {
              method: 'POST',
              headers: ALICE,
              body: JSON.stringify({ name, jsonpath: '$.data', target_url: 'http://127.0.0.1:9/hook', auth: AUTH }),
            });
            assert.equal(created.status, 200);
            uuids.push(((await created.json()) as { uuid: string }).uuid);
          }
        } finally {
          assert.equal(await server.stop(), 0);
        }
        // The second one's credentials were sealed under a key nobody has any more.
        const lost = `v1:${randomBytes(60).toString('base64')}`;
        await db.db.updateTable('subscriptions').set({ auth: lost }).where('uuid', '=', uuids[1]!).execute();
        const before = await db.db.selectFrom('subscriptions').selectAll().orderBy('uuid').execute();

        const keyB = randomBytes(32).toString('base64');
        const result = await cli(`${keyB},${keyA}`, 'reseal');
        assert.equal(result.code, 1, result.stderr);
        assert.equal(
          result.stderr.trim(),
          `reseal: subscription ${uuids[1]}: its auth opens with none of the keys of NOTIFICATIONS_SECRET_KEY; left as it is`,
        );
        assert.match(result.stdout, /sealed the secrets of 1 subscription under the first key/);
        const after = await db.db.selectFrom('subscriptions').selectAll().orderBy('uuid').execute();
        const byUuid = (rows: typeof before, uuid: string) => rows.find((row) => row.uuid === uuid)!;
        assert.deepEqual(byUuid(after, uuids[1]!), byUuid(before, uuids[1]!), 'the unreadable one is untouched');
        assert.notEqual(byUuid(after, uuids[0]!).auth, byUuid(before, uuids[0]!).auth, 'the other one was sealed again');
      } finally {
        await db.close();
        await database.cleanup();
      }
    });
  });
}

function requestFor(target: HttpStub, id: string) {
  return target.requests.find((request) => request.headers['ce-id'] === id || request.body.includes(`"id":"${id}"`));
}
