/**
 * Secrets stored plain (written before NOTIFICATIONS_SECRET_KEY was set, or made by the
 * signing-secrets migration, which has no key) are sealed when the server starts with a key,
 * on every database: the same secrets, only no longer readable without the key.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const ALICE = { 'content-type': 'application/json', 'http-remote-user': 'alice' };
const AUTH = { type: 'header', header: { type: 'Bearer', credentials: 'plain-token' } };

for (const backend of testBackends()) {
  describeOn(backend, `sealing secrets stored plain (${backend.name})`, () => {
    it('seals credentials and both signing secrets at start with a key; they open and sign as before', async () => {
      const database = await syncedDatabase(backend);
      const target = await startStub();
      const db = openDatabase(database.url);
      const env = { NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_TARGET_TIMEOUT: '2s', NOTIFICATIONS_LEASE: '4s' };
      const key = randomBytes(32).toString('base64');
      const secretOf = async (server: RunningServer, uuid: string) =>
        ((await (await fetch(`${server.url}/eventmatch/${uuid}/secret`, { headers: ALICE })).json()) as { secret: string }).secret;
      const stored = (uuid: string) =>
        db.db
          .selectFrom('subscriptions')
          .select(['auth', 'signing_secret', 'previous_signing_secret', 'updated'])
          .where('uuid', '=', uuid)
          .executeTakeFirstOrThrow();
      try {
        const plain = await startServer(env);
        const created = await fetch(`${plain.url}/eventmatch`, {
          method: 'POST',
          headers: ALICE,
          body: JSON.stringify({ name: 'n', jsonpath: '$.data', target_url: `${target.url}/hook`, auth: AUTH }),
        });
        assert.equal(created.status, 200);
        const { uuid } = (await created.json()) as { uuid: string };
        const previous = await secretOf(plain, uuid);
        assert.equal((await fetch(`${plain.url}/eventmatch/${uuid}/secret/rotate`, { method: 'POST', headers: ALICE })).status, 200);
        const current = await secretOf(plain, uuid);
        assert.equal(await plain.stop(), 0);
        const before = await stored(uuid);
        assert.equal(before.signing_secret, current, 'stored plain without a key');

        const keyed = await startServer({ ...env, NOTIFICATIONS_SECRET_KEY: key });
        const after = await stored(uuid);
        try {
          for (const value of [after.auth, after.signing_secret, after.previous_signing_secret]) assert.match(value!, /^v1:/);
          assert.equal(after.updated, before.updated, 'the same secrets: not an update');
          assert.match(keyed.logs(), /"subscriptions":1,"msg":"sealed stored secrets with NOTIFICATIONS_SECRET_KEY"/);

          const record = (await (await fetch(`${keyed.url}/eventmatch/${uuid}`, { headers: ALICE })).json()) as { auth: unknown };
          assert.deepEqual(record.auth, AUTH);
          assert.equal(await secretOf(keyed, uuid), current);

          const event = JSON.stringify({ specversion: '1.0', id: 'sealed-at-rest-1', source: '/seal', type: 't', data: 1 });
          const receive = { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: event };
          assert.equal((await fetch(`${keyed.url}/receive`, receive)).status, 200);
          await eventually(() => target.requests.length === 1, 'the event is delivered');
          const [delivery] = target.requests;
          assert.equal(delivery!.headers.authorization, 'Bearer plain-token');
          // Signed under both secrets, each verifying on its own (the rotation's overlap).
          for (const secret of [current, previous]) new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>);
        } finally {
          assert.equal(await keyed.stop(), 0);
        }

        const again = await startServer({ ...env, NOTIFICATIONS_SECRET_KEY: key });
        assert.equal(await again.stop(), 0);
        // Sealing again would change the bytes (a new random IV each time).
        assert.deepEqual(await stored(uuid), after, 'what is sealed is left as it is');
        assert.doesNotMatch(again.logs(), /sealed stored secrets/, 'nothing left to seal');
      } finally {
        await db.close();
        await target.close();
        await database.cleanup();
      }
    });
  });
}
