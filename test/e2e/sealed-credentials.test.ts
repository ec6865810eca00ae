/**
 * Stored target credentials the running server cannot open (sealed with another
 * NOTIFICATIONS_SECRET_KEY), end to end: that subscription's delivery fails on its own, and the
 * other deliveries of its batch go out and are recorded as usual.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import { openDatabase } from '../../src/db/connect.js';
import { describeOn, testBackends } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { type RunningServer, startServer } from '../support/processes.js';
import { syncedDatabase } from '../support/server-on.js';

const SOURCE = '/sealed-credentials';

async function subscribe(server: RunningServer, targetUrl: string, token: string): Promise<string> {
  const response = await fetch(`${server.url}/eventmatch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'http-remote-user': 'alice' },
    body: JSON.stringify({
      name: token,
      jsonpath: `$[?$.source == '${SOURCE}']`,
      target_url: targetUrl,
      auth: { type: 'header', header: { type: 'Bearer', credentials: token } },
    }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return ((await response.json()) as { uuid: string }).uuid;
}

for (const backend of testBackends()) {
  describeOn(backend, `credentials sealed with another key (${backend.name})`, () => {
    it('fails that delivery alone, naming the credentials, and delivers the rest of the batch once', async () => {
      const database = await syncedDatabase(backend);
      const sealedTarget = await startStub();
      const goodTarget = await startStub();
      const db = openDatabase(database.url);
      const env = { NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_TARGET_TIMEOUT: '2s', NOTIFICATIONS_LEASE: '4s' };
      try {
        const before = await startServer({ ...env, NOTIFICATIONS_SECRET_KEY: randomBytes(32).toString('base64') });
        const sealed = await subscribe(before, sealedTarget.url, 'old-token');
        assert.equal(await before.stop(), 0);

        // The key changed (or was lost): the first subscription's credentials no longer open.
        const server = await startServer({ ...env, NOTIFICATIONS_SECRET_KEY: randomBytes(32).toString('base64') });
        try {
          const good = await subscribe(server, goodTarget.url, 'new-token');
          const response = await fetch(`${server.url}/receive`, {
            method: 'POST',
            headers: { 'content-type': 'application/cloudevents+json' },
            body: JSON.stringify({ specversion: '1.0', id: 'sealed-1', source: SOURCE, type: 'org.example' }),
          });
          assert.equal(response.status, 200);
          assert.equal(((await response.json()) as { matches: number }).matches, 2);

          const matchOf = async (subscription: string) => {
            const row = await db.db
              .selectFrom('matches')
              .selectAll()
              .where('subscription_uuid', '=', subscription)
              .executeTakeFirstOrThrow();
            const attempts = await db.db.selectFrom('attempts').selectAll().where('match_uuid', '=', row.uuid).execute();
            return { row, attempts };
          };
          await eventually(
            async () => (await matchOf(good)).row.state === 'delivered',
            'the other subscription’s delivery is recorded',
            8_000,
          );
          await eventually(async () => (await matchOf(sealed)).row.state === 'failed', 'the sealed one’s delivery failed', 8_000);

          const delivered = await matchOf(good);
          assert.deepEqual(
            delivered.attempts.map((a) => [a.stage, a.status, a.error]),
            [['deliver', 200, null]],
          );
          const failed = await matchOf(sealed);
          assert.deepEqual([failed.row.target_code, failed.row.attempts, failed.row.locked_by], [null, 1, null]);
          assert.equal(failed.attempts.length, 1);
          assert.equal(failed.attempts[0]!.status, null);
          assert.match(failed.attempts[0]!.error ?? '', /stored target credentials .*NOTIFICATIONS_SECRET_KEY/);
          // A permanent failure: the subscription is disabled, its error saying why.
          const subscription = await db.db.selectFrom('subscriptions').selectAll().where('uuid', '=', sealed).executeTakeFirstOrThrow();
          assert.notEqual(subscription.disabled, null);
          assert.equal(subscription.error, failed.attempts[0]!.error);

          // Both rows are finished and unleased, each with one try: a batch whose settlement had
          // failed would still be leased, to be sent again once its lease ran out.
          assert.equal(delivered.row.locked_by, null);
          assert.equal(goodTarget.requests.length, 1, 'delivered exactly once');
          assert.equal(goodTarget.requests[0]!.headers.authorization, 'Bearer new-token');
          assert.equal(sealedTarget.requests.length, 0, 'nothing is sent without its credentials');
          assert.deepEqual(
            server
              .logs()
              .split('\n')
              .filter((line) => /"level":(50|60)/.test(line)),
            [],
          );
          assert.ok(!server.logs().includes('old-token') && !server.logs().includes('new-token'), 'no credentials in the logs');
        } finally {
          assert.equal(await server.stop(), 0);
        }
      } finally {
        await db.close();
        await sealedTarget.close();
        await goodTarget.close();
        await database.cleanup();
      }
    });
  });
}
