/**
 * Several instances on one PostgreSQL database: a signing secret rotated through one of them
 * signs the deliveries another makes within a second. (SQLite serves one instance.)
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeOn, POSTGRES } from '../support/database.js';
import { eventually, startStub } from '../support/http-stub.js';
import { runCli, startServer } from '../support/processes.js';

const USER = { 'http-remote-user': 'alice' };

describeOn(POSTGRES, 'a signing secret rotated on one instance', () => {
  it('signs the deliveries the other instance makes within a second', async () => {
    const database = await POSTGRES.create();
    const target = await startStub();
    try {
      assert.equal((await runCli(['--database-url', database.url, 'dbsync'])).code, 0);
      // No overlap: only the secret the receiving instance reads signs.
      const env = { NOTIFICATIONS_DATABASE_URL: database.url, NOTIFICATIONS_SECRET_OVERLAP: '0s' };
      const [writer, receiver] = [await startServer(env), await startServer(env)];
      try {
        const created = await fetch(`${writer.url}/eventmatch`, {
          method: 'POST',
          headers: { ...USER, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'n', jsonpath: "$[?$.source == '/instances-signing']", target_url: target.url }),
        });
        assert.equal(created.status, 200);
        const { uuid } = (await created.json()) as { uuid: string };
        const send = (id: string) =>
          fetch(`${receiver.url}/receive`, {
            method: 'POST',
            headers: { 'content-type': 'application/cloudevents+json' },
            body: JSON.stringify({ specversion: '1.0', id, source: '/instances-signing', type: 't' }),
          });
        // A new id each try: one received before the receiver heard of the subscription stays logged unmatched.
        let tries = 0;
        await eventually(
          async () => ((await (await send(`before-${tries++}`)).json()) as { matches: number }).matches === 1,
          'the receiver matches',
        );
        await eventually(() => target.requests.length === 1, 'and delivers');

        const rotated = await fetch(`${writer.url}/eventmatch/${uuid}/secret/rotate`, { method: 'POST', headers: USER });
        assert.equal(rotated.status, 200);
        const { secret } = (await rotated.json()) as { secret: string };
        const answered = Date.now();
        assert.equal((await send('after')).status, 200);
        await eventually(() => target.requests.length === 2, 'the receiver delivers the next event', 1_000);
        assert.ok(Date.now() - answered < 1_000);
        const { body, headers } = target.requests[1]!;
        assert.doesNotThrow(() => new Webhook(secret).verify(body, headers as Record<string, string>), 'signed with the new secret');
      } finally {
        await writer.stop();
        await receiver.stop();
      }
    } finally {
      await target.close();
      await database.cleanup();
    }
  });
});
